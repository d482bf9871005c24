package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"
)

// Observer records every request (metrics).
type Observer interface {
	ObserveRequest(listener, route, method string, status int, took time.Duration)
}

// exchange is what the layers of a listener learn about one request while it is served: the
// router notes the route, observe reads it after; the handlers log their errors with its logger.
type exchange struct {
	route string // the matched route's template ("/api/v1/contacts/{contactId}"), never the raw path
	log   *zap.Logger
}

func exchangeOf(r *http.Request) *exchange {
	ex, _ := r.Context().Value(exchangeKey).(*exchange)
	return ex
}

// logOf is the listener's logger, for the errors a request meets.
func logOf(r *http.Request) *zap.Logger {
	if ex := exchangeOf(r); ex != nil {
		return ex.log
	}
	return zap.L() // a handler served outside Listener.Handler, as in a unit test
}

// rememberRoute notes the template of the route a router matched (every router of NewRouter).
func rememberRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ex := exchangeOf(r); ex != nil {
			if tpl, err := mux.CurrentRoute(r).GetPathTemplate(); err == nil {
				ex.route = tpl
			}
		}
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
func (l Listener) observe(next http.Handler) http.Handler {
	log := l.Log.Named("api")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		ex := &exchange{route: "unmatched", log: log}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), exchangeKey, ex)))
		if l.Observer != nil {
			l.Observer.ObserveRequest(l.Name, ex.route, r.Method, rec.status, time.Since(start))
		}
	})
}
