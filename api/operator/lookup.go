package operator

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/projections"
)

type accountKey struct{}

// accountInPath admits a request under /accounts/{accountId} only when that account exists (404
// otherwise, whatever else the path names), and hands handlers the account (accountOf). It also
// notes the account for the access log: a request the operator token refused is logged with no
// account, since its caller proved no claim to one.
func (s *Server) accountInPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, named := mux.Vars(r)["accountId"]
		if !named {
			next.ServeHTTP(w, r)
			return
		}
		httpapi.RecordAccount(r, id)
		account, err := s.deps.Read.Accounts.Account(r.Context(), id)
		switch {
		case httpapi.IsNotFound(err):
			httpapi.WriteError(w, http.StatusNotFound, "account not found")
			return
		case err != nil:
			httpapi.Fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accountKey{}, account)))
	})
}

// accountOf is the account the request's path names (accountInPath checked it exists).
func accountOf(r *http.Request) projections.Account {
	account, _ := r.Context().Value(accountKey{}).(projections.Account)
	return account
}
