package servicetest

import (
	"net/http"
	"net/url"
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

// CRM is a test CRM pipeline with its stage ids in order.
type CRM struct {
	ID     string
	Stages []string
}

// NewCRM creates a CRM with stages of the given names through the operator API.
func (s *Service) NewCRM(t testing.TB, accountID, name string, stageNames ...string) CRM {
	t.Helper()
	stages := make([]map[string]any, len(stageNames))
	for i, n := range stageNames {
		stages[i] = map[string]any{"name": n}
	}
	res := s.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/crms", "", map[string]any{"name": name, "stages": stages}).Expect(t, http.StatusCreated)
	crm := res.Object(t, "crm")
	out := CRM{ID: crm["id"].(string)}
	for _, st := range crm["stages"].([]any) {
		out.Stages = append(out.Stages, st.(map[string]any)["id"].(string))
	}
	return out
}

// Field is a form field or booking question to define: {label, type, contactField?, required?}.
type Field map[string]any

// NewForm creates a form and returns its field ids in order.
func (s *Service) NewForm(t testing.TB, accountID, name string, tagIDs []string, fields ...Field) (string, []string) {
	t.Helper()
	body := map[string]any{"name": name, "fields": fields}
	if tagIDs != nil {
		body["tagIds"] = tagIDs
	}
	form := s.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/forms", "", body).Expect(t, http.StatusCreated).Object(t, "form")
	return form["id"].(string), idsOf(t, form["fields"])
}

// NewEventType creates a calendar and returns its question ids in order.
func (s *Service) NewEventType(t testing.TB, accountID, name string, durationMinutes int, questions ...Field) (string, []string) {
	t.Helper()
	body := map[string]any{"name": name, "durationMinutes": durationMinutes, "meetingUrl": "https://meet.example.com/" + url.PathEscape(name), "questions": questions}
	if questions == nil {
		body["questions"] = []Field{}
	}
	et := s.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/event-types", "", body).Expect(t, http.StatusCreated).Object(t, "eventType")
	return et["id"].(string), idsOf(t, et["questions"])
}

// Product is a checkout product made by NewProduct: its id and the ids of its tiers and bumps, by index.
type Product struct {
	ID      string
	TierIDs []string
	BumpIDs []string
}

// NewProduct creates a product from a POST /admin/v1/accounts/{a}/products body.
func (s *Service) NewProduct(t testing.TB, accountID string, body map[string]any) Product {
	t.Helper()
	p := s.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/products", "", body).Expect(t, http.StatusCreated).Object(t, "product")
	return Product{ID: p["id"].(string), TierIDs: idsOf(t, p["pricingTiers"]), BumpIDs: idsOf(t, p["bumps"])}
}

func idsOf(t testing.TB, list any) []string {
	t.Helper()
	items, ok := list.([]any)
	if !ok {
		t.Fatalf("%v is not a list", list)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.(map[string]any)["id"].(string)
	}
	return ids
}
