package integration

import (
	"context"
	"net/http"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
)

type principalKey struct{}

// principal is the API key a request authenticated with.
type principal struct {
	key projections.APIKey
}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// accountID is the account of the request's API key: every request acts inside it.
func (p principal) accountID() string { return p.key.AccountID }

// accountScope is whose Idempotency-Keys a request uses: its API key's account's, shared by
// every key of the account.
func accountScope(r *http.Request) string { return "account:" + principalOf(r.Context()).accountID() }

// meta is the metadata of the events a request records.
func (p principal) meta(r *http.Request) commands.Meta {
	return commands.Meta{
		AccountID:     p.key.AccountID,
		Actor:         domain.KeyActor(p.key.ID),
		RequestID:     httpapi.RequestID(r.Context()),
		CorrelationID: httpapi.CorrelationID(r),
	}
}

// authenticate admits requests with a valid, unrevoked API key (401 otherwise, counted against
// the client's address: unauthorized).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := httpapi.Bearer(r)
		if !ok {
			s.unauthorized(w, r, "missing bearer API key")
			return
		}
		key, err := s.deps.Keys.APIKeyByHash(r.Context(), domain.HashAPIKey(token))
		switch {
		case httpapi.IsNotFound(err):
			s.unauthorized(w, r, "invalid API key")
			return
		case err != nil:
			httpapi.Fail(w, r, err)
			return
		}
		httpapi.RecordAccount(r, key.AccountID)
		if key.Revoked {
			s.unauthorized(w, r, "API key revoked")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, principal{key: key})))
	})
}

// scoped admits keys that carry scope (403 otherwise).
func scoped(scope domain.Scope, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !principalOf(r.Context()).key.HasScope(scope) {
			httpapi.WriteCodedError(w, domain.CodeInsufficientScope, "", "API key lacks scope "+string(scope))
			return
		}
		h.ServeHTTP(w, r)
	})
}
