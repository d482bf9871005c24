package operator

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
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

// tokenScope is whose Idempotency-Keys a request uses: the operator token's. The scope names a
// digest of the token, never the token, so that keys stay apart should there be several tokens
// (and a new token starts with no keys of its own).
func tokenScope(token string) func(*http.Request) string {
	sum := sha256.Sum256([]byte(token))
	scope := "operator:" + hex.EncodeToString(sum[:16])
	return func(*http.Request) string { return scope }
}

// operatorMeta is the metadata of events the operator API records for the account in the path.
func operatorMeta(r *http.Request) commands.Meta {
	return commands.Meta{
		AccountID:     mux.Vars(r)["accountId"],
		Actor:         domain.OperatorActor,
		RequestID:     httpapi.RequestID(r.Context()),
		CorrelationID: httpapi.CorrelationID(r),
	}
}
