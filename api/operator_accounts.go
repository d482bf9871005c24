package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/wireformat"
)

// operatorMeta is the metadata of events the operator API records for an account.
func operatorMeta(r *http.Request) commands.Meta {
	return commands.Meta{
		AccountID:     mux.Vars(r)["accountId"],
		Actor:         domain.OperatorActor,
		RequestID:     requestID(r.Context()),
		CorrelationID: r.Header.Get("X-Correlation-Id"),
	}
}

func accountView(a projections.Account) object {
	return object{"id": a.ID, "name": a.Name, "createdAt": wireformat.Time(a.CreatedAt)}
}

// createAccount serves POST /admin/v1/accounts.
func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name *string `json:"name"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Name == nil {
		writeError(w, http.StatusBadRequest, "name is required")
		return
	}
	res, err := s.deps.Commands.CreateAccount.Handle(r.Context(), commands.CreateAccount{RequestID: requestID(r.Context()), Name: *req.Name})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	account, err := s.deps.Accounts.Account(r.Context(), res.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, object{"account": accountView(account)})
}

// getAccount serves GET /admin/v1/accounts/{accountId}.
func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, object{"account": accountView(account)})
}

// existingAccount loads the account named in the path, answering 404 when there is none.
func (s *Server) existingAccount(w http.ResponseWriter, r *http.Request) (projections.Account, bool) {
	account, err := s.deps.Accounts.Account(r.Context(), mux.Vars(r)["accountId"])
	if isNotFound(err) {
		writeError(w, http.StatusNotFound, "account not found")
		return account, false
	}
	if err != nil {
		s.fail(w, r, err)
		return account, false
	}
	return account, true
}

func apiKeyView(k projections.APIKey) object {
	return object{"id": k.ID, "name": k.Name, "scopes": wireformat.List(k.Scopes), "createdAt": wireformat.Time(k.CreatedAt), "revoked": k.Revoked}
}

// issueAPIKey serves POST /admin/v1/accounts/{accountId}/api-keys.
func (s *Server) issueAPIKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.IssueAPIKey.Handle(r.Context(), commands.IssueAPIKey{Meta: operatorMeta(r), Name: req.Name, Scopes: req.Scopes})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	key, err := s.deps.Accounts.APIKeyByHash(r.Context(), domain.HashAPIKey(res.Secret))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	view := apiKeyView(key)
	view["key"] = res.Secret
	writeJSON(w, http.StatusCreated, object{"apiKey": view})
}

// listAPIKeys serves GET /admin/v1/accounts/{accountId}/api-keys (never the secrets).
func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	keys, err := s.deps.Accounts.APIKeys(r.Context(), account.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]object, len(keys))
	for i, k := range keys {
		views[i] = apiKeyView(k)
	}
	writeJSON(w, http.StatusOK, object{"apiKeys": views})
}

// revokeAPIKey serves DELETE /admin/v1/accounts/{accountId}/api-keys/{keyId}.
func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request) {
	pos, err := s.deps.Commands.RevokeAPIKey.Handle(r.Context(), commands.RevokeAPIKey{Meta: operatorMeta(r), KeyID: mux.Vars(r)["keyId"]})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, pos) {
		return
	}
	writeJSON(w, http.StatusOK, nil)
}
