package apptest

import (
	"net/http"
	"testing"
)

// Account is a test account with a key carrying every scope.
type Account struct {
	ID  string
	Key string
}

// NewAccount creates an account and an all-scopes key through the operator API.
func (s *Service) NewAccount(t testing.TB) Account {
	t.Helper()
	acc := s.Operator.Post(t, "/admin/v1/accounts", "", map[string]any{"name": "Test " + t.Name()}).Expect(t, http.StatusCreated)
	id := acc.Object(t, "account")["id"].(string)
	return Account{ID: id, Key: s.NewKey(t, id, nil)}
}

// NewKey issues a key with the given scopes (nil: every scope) and returns its secret.
func (s *Service) NewKey(t testing.TB, accountID string, scopes []string) string {
	t.Helper()
	body := map[string]any{"name": "test key"}
	if scopes != nil {
		body["scopes"] = scopes
	}
	res := s.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/api-keys", "", body).Expect(t, http.StatusCreated)
	return res.Object(t, "apiKey")["key"].(string)
}

// NewTag creates a tag and returns its id.
func (s *Service) NewTag(t testing.TB, accountID, name string, automations ...map[string]any) string {
	t.Helper()
	body := map[string]any{"name": name}
	if automations != nil {
		body["automations"] = automations
	}
	res := s.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/tags", "", body).Expect(t, http.StatusCreated)
	return res.Object(t, "tag")["id"].(string)
}

// NewCustomField defines a custom field and returns its id.
func (s *Service) NewCustomField(t testing.TB, accountID, name string) string {
	t.Helper()
	res := s.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/custom-fields", "", map[string]any{"name": name}).Expect(t, http.StatusCreated)
	return res.Object(t, "customField")["id"].(string)
}
