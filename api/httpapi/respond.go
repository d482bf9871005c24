package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/goccy/go-json"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
	"github.com/funnelhq/funnel/webhooks"
)

// Answer writes a success body that is a generated wire type (api/wire), as it is.
func Answer(w http.ResponseWriter, status int, body any) {
	writeBody(w, status, body)
}

// WriteError writes {"error": message, "code": code} with the general code of status
// (domain.DefaultErrorCode: invalid_request for a 400, conflict for a 409, ...). A refusal with a
// code of its own, or a field at fault, is written with WriteCodedError.
func WriteError(w http.ResponseWriter, status int, message string) {
	WriteCodedError(w, domain.DefaultErrorCode(status), "", message)
}

// WriteCodedError writes {"error": message, "code": code, "param": param} with the status of
// code (domain.ErrorCodes); param, the JSON path of the field at fault, is left out when empty.
func WriteCodedError(w http.ResponseWriter, code domain.ErrorCode, param, message string) {
	writeBody(w, code.Status(), errorBody(code, param, message))
}

// WriteFieldError answers 400 invalid_request for a bad value of one field, param being its JSON
// path ("email", "tagIds[3]", "values.fld_x").
func WriteFieldError(w http.ResponseWriter, param, message string) {
	WriteCodedError(w, domain.CodeInvalidRequest, param, message)
}

// errorBody is the body of an error answer.
func errorBody(code domain.ErrorCode, param, message string) wire.Error {
	body := wire.Error{Error: message, Code: wire.ErrorCode(code)}
	if param != "" {
		body.Param = &param
	}
	return body
}

// jsonContentType is the Content-Type of every JSON answer.
const jsonContentType = "application/json; charset=utf-8"

// writeBody encodes body with goccy/go-json, a drop-in for encoding/json (the same output: map
// keys sorted, HTML characters escaped, a newline at the end) that encodes a list answer in about
// a third of the time.
func writeBody(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", jsonContentType)
	w.WriteHeader(status)
	// The status is sent: an encoding error can only be a client gone away, nobody to tell.
	_ = json.NewEncoder(w).Encode(body)
}

// Fail answers an error from a command or a query with the status its kind calls for. Anything
// unexpected is logged with the request id and answered with a message that leaks nothing.
func Fail(w http.ResponseWriter, r *http.Request, err error) {
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		code := de.Code
		if code == "" {
			code = domain.DefaultErrorCode(statusOf(de.Kind))
		}
		WriteCodedError(w, code, de.Param, de.Message)
	case IsNotFound(err):
		WriteError(w, http.StatusNotFound, "not found")
	case errors.Is(err, paging.ErrBadCursor):
		writeBadCursor(w, "cursor")
	case errors.Is(err, domain.ErrAlreadyPerformed):
		// A retry raced the first attempt of its Idempotency-Key to the log, and lost: that
		// attempt answers (Idempotent answers this request itself).
		answerInProgress(w)
	case errors.Is(err, commands.ErrTooMuchContention):
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody is left to answer.
	case unavailable(r, err):
		// Nothing was decided: the database could not be reached or refused more work for now.
		logOf(r).Warn("database unavailable", zap.String("requestId", RequestID(r.Context())),
			zap.String("method", r.Method), zap.String("route", routeOf(r)), zap.Error(err))
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusServiceUnavailable, "the service cannot reach its database just now; retry shortly")
	default:
		logOf(r).Error("request failed", zap.String("requestId", RequestID(r.Context())),
			zap.String("method", r.Method), zap.String("route", routeOf(r)), zap.Error(err))
		WriteError(w, http.StatusInternalServerError, "internal error")
	}
}

// FailList is Fail for a list whose cursor came in the query parameter cursorParam rather than
// in cursor (the event feed's after): a cursor this service did not hand out is a 400 whose
// param names the parameter the client sent it in.
func FailList(w http.ResponseWriter, r *http.Request, err error, cursorParam string) {
	if errors.Is(err, paging.ErrBadCursor) {
		writeBadCursor(w, cursorParam)
		return
	}
	Fail(w, r, err)
}

// writeBadCursor answers a cursor this service did not hand out, sent in the query parameter param.
func writeBadCursor(w http.ResponseWriter, param string) {
	WriteFieldError(w, param, param+" is not a cursor this list handed out: start again from the first page, without one")
}

// IsNotFound tells whether a lookup found nothing, in a read model or in the webhook tables.
func IsNotFound(err error) bool {
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
