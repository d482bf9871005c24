package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	exchangeKey
)

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestIDs gives every request an id (the caller's X-Request-Id when it is sane), echoes it,
// and puts it in the context: it becomes the requestId of the events the request records.
func requestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it aborts the program instead)
			id = "req_" + hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// validCorrelationID is a correlation id the log keeps: visible ASCII, as the ids of tracing
// systems are (a W3C traceparent, a UUID, base64), short enough not to swell every event.
var validCorrelationID = regexp.MustCompile(`^[\x21-\x7e]{1,128}$`)

// CorrelationID is the request's X-Correlation-Id when it is sane, else "" (the events then
// carry the request id as their correlation id, commands.Meta). It is a caller's label, not
// data: an id of any length or with spaces and control characters would be kept in the log for
// ever, unsealed.
func CorrelationID(r *http.Request) string {
	if id := r.Header.Get("X-Correlation-Id"); validCorrelationID.MatchString(id) {
		return id
	}
	return ""
}

// RequestID is the id of the request being served (requestIDs).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// rejectUnsafeURLs answers 400 for a path or query that holds a NUL character or invalid UTF-8:
// no id, email or cursor of this service can, and PostgreSQL refuses to compare text with them.
func rejectUnsafeURLs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !safeText(r.URL.Path) {
			WriteError(w, http.StatusBadRequest, "the URL path must be UTF-8 without NUL characters")
			return
		}
		// What the handlers read (r.URL.Query): pairs that do not parse are dropped there, as here.
		query, _ := url.ParseQuery(r.URL.RawQuery)
		for name, values := range query {
			for _, v := range append(values, name) {
				if !safeText(v) {
					WriteError(w, http.StatusBadRequest, "query parameters must be UTF-8 without NUL characters")
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func safeText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// recoverPanics turns a panic into a logged 500 instead of a dropped connection.
func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logOf(r).Error("panic serving request", zap.Any("panic", v), zap.String("route", routeOf(r)), zap.Stack("stack"))
				WriteError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// serveHEADAsGET answers HEAD on every GET route, 401, 403, 404 and 405 included, exactly as
// GET: the router sees GET, and net/http's server sends the status and headers the handler
// writes without the body (it discards what a handler writes for HEAD, counting it for
// Content-Length), as its own ServeMux does. The access log and the metrics, which wrap this,
// still see HEAD.
func serveHEADAsGET(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			get := r.WithContext(r.Context()) // a shallow copy: the server keeps its own, a HEAD
			get.Method = http.MethodGet
			r = get
		}
		next.ServeHTTP(w, r)
	})
}
