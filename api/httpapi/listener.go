// Package httpapi is the HTTP plumbing the integration API and the operator API share: the
// routers (JSON 404 and 405, HEAD, health endpoints), the middleware every request passes
// through (request ids, URL guard, panics, access log and metrics), JSON answers and errors,
// request bodies, list pages, read-your-writes, and what both APIs show alike: the views of
// shared resources and the creation of webhook subscriptions.
package httpapi

import (
	"net/http"

	"go.uber.org/zap"
)

// Listener is one of the service's two listeners, as its requests are logged and counted.
type Listener struct {
	Name     string      // "api" or "operator": the listener of the metrics and of the access log
	Log      *zap.Logger // the service's logger
	Observer Observer    // records each request's metrics; nil records nothing
	// Limit applies rate limits to the listener's requests (RateLimits.Middleware); nil applies none.
	Limit func(http.Handler) http.Handler
	// Unavailable tells whether an error means the database could not be reached or refused
	// more work for now (the adapter knows its drivers' errors: sqldb.Unavailable); Fail answers
	// those 503 with Retry-After. nil: none does.
	Unavailable func(error) bool
}

// Handler wraps a listener's router in the middleware every request passes through, outermost
// first: the request id, the access log and the metrics (so that every answer below, a refused
// URL included, is logged and counted), panic recovery, the rate limits (so that every answer
// below carries their headers), the URL guard, and HEAD served as GET.
func (l Listener) Handler(router http.Handler) http.Handler {
	inner := rejectUnsafeURLs(serveHEADAsGET(router))
	if l.Limit != nil {
		inner = l.Limit(inner)
	}
	return requestIDs(l.observe(recoverPanics(noStore(inner))))
}

// noStore marks every answer as one no cache keeps and no browser reads as another type than it
// says: answers hold secrets shown once (an API key, a webhook's signing secret, an activation
// token) and personal data. A handler that may be cached (the console's files) says so itself.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
