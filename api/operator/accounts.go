package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// createAccount serves POST /admin/v1/accounts.
func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) {
	var req admin.CreateAccountRequest // name a pointer: left out or null is refused here (overlay.yaml)
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
	httpapi.Answer(w, http.StatusCreated, admin.AccountResponse{Success: true, Account: accountView(account)})
}

// getAccount serves GET /admin/v1/accounts/{accountId}.
func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	httpapi.Answer(w, http.StatusOK, admin.AccountResponse{Success: true, Account: accountView(accountOf(r))})
}

// issueAPIKey serves POST /admin/v1/accounts/{accountId}/api-keys {name?, scopes?}; an empty
// body is {}, as for every endpoint whose members are all optional.
func (s *Server) issueAPIKey(w http.ResponseWriter, r *http.Request) {
	var req admin.IssueApiKeyRequest
	if !httpapi.DecodeOptional(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.IssueAPIKey.Handle(r.Context(), commands.IssueAPIKey{Meta: operatorMeta(r), Name: wire.Value(req.Name), Scopes: scopes(req.Scopes)})
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
	httpapi.Answer(w, http.StatusCreated, admin.ApiKeyIssued{Success: true, ApiKey: issuedAPIKeyView(key, res.Secret)})
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
	httpapi.Answer(w, http.StatusOK, admin.Success{Success: true})
}

// accountRoutes registers the routes of accounts and their API keys (Router, server.go).
func (s *Server) accountRoutes(admin routes) {
	admin(http.MethodGet, "/accounts", s.listAccounts)
	admin(http.MethodPost, "/accounts", s.createAccount)
	admin(http.MethodGet, "/accounts/{accountId}", s.getAccount)
	admin(http.MethodPost, "/accounts/{accountId}/api-keys", s.issueAPIKey)
	admin(http.MethodGet, "/accounts/{accountId}/api-keys", s.listAPIKeys)
	admin(http.MethodDelete, "/accounts/{accountId}/api-keys/{keyId}", s.revokeAPIKey)
}
