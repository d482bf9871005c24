package operator

import (
	"crypto/subtle"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
)

// operatorOnly admits requests with the operator token (401 otherwise).
func (s *Server) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := httpapi.Bearer(r)
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.deps.AdminToken)) != 1 {
			httpapi.Unauthorized(w, "missing or invalid operator token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// operatorMeta is the metadata of events the operator API records for the account in the path.
func operatorMeta(r *http.Request) commands.Meta {
	return commands.Meta{
		AccountID:     mux.Vars(r)["accountId"],
		Actor:         domain.OperatorActor,
		RequestID:     httpapi.RequestID(r.Context()),
		CorrelationID: r.Header.Get("X-Correlation-Id"),
	}
}
