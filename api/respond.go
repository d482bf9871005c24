// Package api serves the integration API (/api/v1, for integrators, with API keys) and the
// operator API (/admin/v1, for the app side, with the operator token) over gorilla/mux. Handlers
// decode and validate requests, call a command or a read-model query, and answer in the shapes
// of integration-api.md and operator-api.md.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/paging"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// object is a JSON response body.
type object = map[string]any

// writeJSON writes a success body: {"success": true, ...members}.
func writeJSON(w http.ResponseWriter, status int, members object) {
	body := object{"success": true}
	for k, v := range members {
		body[k] = v
	}
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// writeError writes {"error": message}.
func writeError(w http.ResponseWriter, status int, message string) {
	writeBody(w, status, object{"error": message})
}

// fail answers an error from a command or a query with the status its kind calls for. Anything
// unexpected is logged with the request id and answered with a message that leaks nothing.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		writeError(w, statusOf(de.Kind), de.Message)
	case isNotFound(err):
		writeError(w, http.StatusNotFound, "not found")
	case errors.Is(err, paging.ErrBadCursor):
		writeError(w, http.StatusBadRequest, "cursor is invalid")
	case errors.Is(err, commands.ErrTooMuchContention):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody is left to answer.
	default:
		s.log.Error("request failed", zap.String("requestId", requestID(r.Context())),
			zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal error")
	}
}

// isNotFound tells whether a lookup found nothing, in a read model or in the webhook tables.
func isNotFound(err error) bool {
	return errors.Is(err, projections.ErrNotFound) || errors.Is(err, webhooks.ErrNotFound)
}

func statusOf(kind domain.ErrorKind) int {
	switch kind {
	case domain.KindNotFound:
		return http.StatusNotFound
	case domain.KindForbidden:
		return http.StatusForbidden
	case domain.KindConflict:
		return http.StatusConflict
	default:
		return http.StatusBadRequest
	}
}

// readYourWrites is how long a write waits for the read models to show it before it answers.
const readYourWrites = 10 * time.Second

// awaitReadModels waits until the read models reached pos (DESIGN.md invariant 6). It reports
// false, having answered 503, in the rare case they do not within readYourWrites: the write is
// saved, and repeating the request is safe.
func (s *Server) awaitReadModels(w http.ResponseWriter, r *http.Request, pos int64) bool {
	ctx, cancel := context.WithTimeout(r.Context(), readYourWrites)
	defer cancel()
	if err := s.deps.ReadModels.WaitReadModels(ctx, pos); err != nil {
		if r.Context().Err() != nil {
			return false
		}
		s.log.Error("read models did not catch up with a write", zap.Int64("position", pos), zap.String("requestId", requestID(r.Context())))
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "the change was saved but is not readable yet; retry the request")
		return false
	}
	return true
}
