package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/projections"
)

// existingAccount loads the account named in the path, answering 404 when there is none.
func (s *Server) existingAccount(w http.ResponseWriter, r *http.Request) (projections.Account, bool) {
	account, err := s.deps.Accounts.Account(r.Context(), mux.Vars(r)["accountId"])
	if httpapi.IsNotFound(err) {
		httpapi.WriteError(w, http.StatusNotFound, "account not found")
		return account, false
	}
	if err != nil {
		httpapi.Fail(w, r, err)
		return account, false
	}
	return account, true
}

// failLookup answers a failed lookup of a resource under the account in the path. The operator
// names the account, so a resource of another account is simply not one of this account's: 404.
func failLookup(w http.ResponseWriter, r *http.Request, what string, err error) {
	if err == nil || httpapi.IsNotFound(err) {
		httpapi.WriteError(w, http.StatusNotFound, what+" not found in this account")
		return
	}
	httpapi.Fail(w, r, err)
}
