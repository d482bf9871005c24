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

// exchange is what the layers of a listener learn about one request while it is served, for the
// access log and the metrics: the handlers below the router fill it in, observe reads it after.
type exchange struct {
	route     string // the matched route's template ("/api/v1/contacts/{contactId}"), never the raw path
	accountID string // the account the request acts for, once known (RecordAccount)
	log       *zap.Logger
	// unavailable is the listener's Unavailable.
	unavailable func(error) bool
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

// unavailable tells whether err means the database could not be reached or refused more work
// for now, as the listener's adapter classifies it (Listener.Unavailable).
func unavailable(r *http.Request, err error) bool {
	ex := exchangeOf(r)
	return ex != nil && ex.unavailable != nil && ex.unavailable(err)
}

// RecordAccount notes the account a request acts for (the API key's on /api/v1, the path's on
// /admin/v1), for the access log.
func RecordAccount(r *http.Request, accountID string) {
	if ex := exchangeOf(r); ex != nil && accountID != "" {
		ex.accountID = accountID
	}
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

// routeOf is the template of the route that serves r ("/api/v1/checkout/activations/{token}"),
// for the logs: a path can hold a secret (an activation token) or personal data, its template
// never does.
func routeOf(r *http.Request) string {
	if ex := exchangeOf(r); ex != nil && ex.route != "" {
		return ex.route
	}
	if route := mux.CurrentRoute(r); route != nil {
		if tpl, err := route.GetPathTemplate(); err == nil {
			return tpl
		}
	}
	return "(no route)"
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

// observe writes one access log line per request at info (listener, method, route, status,
// duration, request id, and the account once known) and records the request's metrics. Both
// name the route by its template (rememberRoute), never by the raw path: ids stay out of the
// metrics' labels, and a line tells which endpoint was asked whatever the ids.
func (l Listener) observe(next http.Handler) http.Handler {
	log := l.Log.Named("api")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		ex := &exchange{route: "unmatched", log: log, unavailable: l.Unavailable}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), exchangeKey, ex)))
		took := time.Since(start)
		if l.Observer != nil {
			l.Observer.ObserveRequest(l.Name, ex.route, r.Method, rec.status, took)
		}
		fields := []zap.Field{
			zap.String("listener", l.Name), zap.String("method", r.Method), zap.String("route", ex.route),
			zap.Int("status", rec.status), zap.Duration("duration", took), zap.String("requestId", RequestID(r.Context())),
		}
		if ex.accountID != "" {
			fields = append(fields, zap.String("accountId", ex.accountID))
		}
		if probes[ex.route] {
			log.Debug("request", fields...) // a load balancer or scraper asks every few seconds
			return
		}
		log.Info("request", fields...)
	})
}

// probes are the routes that health checks and metric scrapers call all day: their access lines
// go to debug, so that the info log holds what integrators and operators did.
var probes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}
