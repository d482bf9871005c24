package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

func accountView(a projections.Account) httpapi.Object {
	return httpapi.Object{"id": a.ID, "name": a.Name, "createdAt": wire.Time(a.CreatedAt)}
}

// createAccount serves POST /admin/v1/accounts.
func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name *string `json:"name"`
	}
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.Name == nil {
		httpapi.WriteFieldError(w, "name", "name is required")
		return
	}
	res, err := s.deps.Commands.CreateAccount.Handle(r.Context(), commands.CreateAccount{RequestID: httpapi.RequestID(r.Context()), Name: *req.Name})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	account, err := s.deps.Read.Accounts.Account(r.Context(), res.AccountID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, httpapi.Object{"account": accountView(account)})
}

// getAccount serves GET /admin/v1/accounts/{accountId}.
func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{"account": accountView(account)})
}

func apiKeyView(k projections.APIKey) httpapi.Object {
	return httpapi.Object{"id": k.ID, "name": k.Name, "scopes": wire.List(k.Scopes), "createdAt": wire.Time(k.CreatedAt), "revoked": k.Revoked}
}

// issueAPIKey serves POST /admin/v1/accounts/{accountId}/api-keys.
func (s *Server) issueAPIKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.IssueAPIKey.Handle(r.Context(), commands.IssueAPIKey{Meta: operatorMeta(r), Name: req.Name, Scopes: req.Scopes})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	key, err := s.deps.Read.Accounts.APIKeyByHash(r.Context(), domain.HashAPIKey(res.Secret))
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	view := apiKeyView(key)
	view["key"] = res.Secret
	httpapi.WriteJSON(w, http.StatusCreated, httpapi.Object{"apiKey": view})
}

// listAPIKeys serves GET /admin/v1/accounts/{accountId}/api-keys (never the secrets), oldest
// first.
func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	httpapi.WritePage(w, r, "apiKeys", func(page paging.Page) ([]projections.APIKey, string, error) {
		return s.deps.Read.Accounts.APIKeys(r.Context(), account.ID, page)
	}, apiKeyView)
}

// revokeAPIKey serves DELETE /admin/v1/accounts/{accountId}/api-keys/{keyId}.
func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request) {
	key, err := s.deps.Read.Accounts.APIKey(r.Context(), accountOf(r).ID, mux.Vars(r)["keyId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	pos, err := s.deps.Commands.RevokeAPIKey.Handle(r.Context(), commands.RevokeAPIKey{Meta: operatorMeta(r), KeyID: key.ID})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, pos) {
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, nil)
}
