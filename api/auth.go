package api

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
)

// principal is the API key a request authenticated with.
type principal struct {
	key projections.APIKey
}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey).(principal)
	return p
}

// meta is the metadata of the events a request records.
func (p principal) meta(r *http.Request) commands.Meta {
	return commands.Meta{
		AccountID:     p.key.AccountID,
		Actor:         domain.KeyActor(p.key.ID),
		RequestID:     requestID(r.Context()),
		CorrelationID: r.Header.Get("X-Correlation-Id"),
	}
}

// bearer returns the token of an "Authorization: Bearer …" header.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

func unauthorized(w http.ResponseWriter, message string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="funnel"`)
	writeError(w, http.StatusUnauthorized, message)
}

// authenticate admits requests with a valid, unrevoked API key (401 otherwise).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			unauthorized(w, "missing bearer API key")
			return
		}
		key, err := s.deps.Accounts.APIKeyByHash(r.Context(), domain.HashAPIKey(token))
		switch {
		case isNotFound(err):
			unauthorized(w, "invalid API key")
			return
		case err != nil:
			s.fail(w, r, err)
			return
		case key.Revoked:
			unauthorized(w, "API key revoked")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, principal{key: key})))
	})
}

// scoped admits keys that carry scope (403 otherwise).
func (s *Server) scoped(scope domain.Scope, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !principalOf(r.Context()).key.HasScope(scope) {
			writeError(w, http.StatusForbidden, "API key lacks scope "+string(scope))
			return
		}
		h(w, r)
	})
}

// operatorOnly admits requests with the operator token.
func (s *Server) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.deps.AdminToken)) != 1 {
			unauthorized(w, "missing or invalid operator token")
			return
		}
		next.ServeHTTP(w, r)
	})
}
