package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"go.uber.org/zap"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	principalKey
	routeKey
)

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestIDs gives every request an id (the caller's X-Request-Id when it is sane), echoes it,
// and puts it in the context: it becomes the requestId of the events the request records.
func requestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = "req_" + hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// rejectUnsafeURLs answers 400 for a path or query that holds a NUL character or invalid UTF-8:
// no id, email or cursor of this service can, and PostgreSQL refuses to compare text with them.
func rejectUnsafeURLs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !safeText(r.URL.Path) {
			writeError(w, http.StatusBadRequest, "the URL path must be UTF-8 without NUL characters")
			return
		}
		// What the handlers read (r.URL.Query): pairs that do not parse are dropped there, as here.
		query, _ := url.ParseQuery(r.URL.RawQuery)
		for name, values := range query {
			for _, v := range append(values, name) {
				if !safeText(v) {
					writeError(w, http.StatusBadRequest, "query parameters must be UTF-8 without NUL characters")
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func safeText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// recoverPanics turns a panic into a logged 500 instead of a dropped connection.
func recoverPanics(log *zap.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("panic serving request", zap.Any("panic", v), zap.String("path", r.URL.Path), zap.Stack("stack"))
				writeError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// observe records every request's route, status and duration. The route is the matched
// template (rememberRoute), so that metrics do not grow a label per id.
func (s *Server) observe(listener string, root *mux.Router) http.Handler {
	root.Use(rememberRoute)
	next := recoverPanics(s.log, root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		route := &matchedRoute{template: "unmatched"}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), routeKey, route)))
		if s.deps.HTTP != nil {
			s.deps.HTTP.ObserveRequest(listener, route.template, r.Method, rec.status, time.Since(start))
		}
	})
}

type matchedRoute struct{ template string }

func rememberRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if holder, ok := r.Context().Value(routeKey).(*matchedRoute); ok {
			if tpl, err := mux.CurrentRoute(r).GetPathTemplate(); err == nil {
				holder.template = tpl
			}
		}
		next.ServeHTTP(w, r)
	})
}

// isAPIHost matches requests for FUNNEL_API_HOST, whatever the port.
func (s *Server) isAPIHost(r *http.Request, _ *mux.RouteMatch) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.EqualFold(host, s.deps.APIHost)
}
