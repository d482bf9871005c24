package httpapi

import (
	"net/http"
	"strings"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/gorilla/mux"
)

// NewRouter returns a router of this service: an unknown path answers a JSON 404 and a wrong
// method a JSON 405 with Allow, and each matched route's template is noted for the access log
// and the metrics.
//
// Paths are matched as sent. By default gorilla/mux answers a path it would write otherwise
// (with a double slash, say) with a 301 to the cleaned path, which clients follow with GET and
// without the body; here an empty segment matches no route: 404. Every router a request passes
// through must skip cleaning, nested ones included.
//
// Register routes with their full paths on such flat routers, not on mux subrouters: a
// subrouter's routes inherit its matchers (the host, the path prefix), and in gorilla/mux v1.8.1
// an inherited matcher that matches clears the method mismatch an earlier route found, so a
// wrong method on a known path would answer 404 instead of 405.
func NewRouter() *mux.Router {
	router := mux.NewRouter().SkipClean(true)
	router.NotFoundHandler = http.HandlerFunc(notFound)
	router.MethodNotAllowedHandler = allowedMethods(router)
	router.Use(refuseEncodedSlashes, rememberRoute)
	return router
}

// refuseEncodedSlashes answers 404 for a path with an encoded slash (%2F): the router matches the
// decoded path, where it would be a separator, so /api/v1/contacts%2Ftags would be served as
// /api/v1/contacts/tags. No path of either API has a slash in a segment.
func refuseEncodedSlashes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(strings.ToLower(r.URL.RawPath), "%2f") {
			notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// AddHealth adds GET /healthz (the process answers) and GET /readyz (200 while ready reports
// nil; otherwise 503 with the status and reason it reports).
func AddHealth(router *mux.Router, ready func() *NotReady) {
	router.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, http.StatusOK, wire.Health{Status: wire.Ok})
	}).Methods(http.MethodGet)
	router.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready == nil {
			writeBody(w, http.StatusOK, wire.Health{Status: wire.Ready})
			return
		}
		if not := ready(); not != nil {
			writeBody(w, http.StatusServiceUnavailable, wire.Health{Status: not.Status, Reason: &not.Reason})
			return
		}
		writeBody(w, http.StatusOK, wire.Health{Status: wire.Ready})
	}).Methods(http.MethodGet)
}

// RefuseOtherMethods answers 405 on path for every method that no route of the router serves
// there, where a broader route would otherwise take the request: register it after the path's
// own routes and before the broader one (a path variable that would read the path's last
// segment as an id).
func RefuseOtherMethods(router *mux.Router, path string) {
	router.Handle(path, allowedMethods(router)).Name(wrongMethodRoute)
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	WriteError(w, http.StatusNotFound, "not found")
}

// wrongMethodRoute names the routes of RefuseOtherMethods.
const wrongMethodRoute = "wrong-method"

// allowedMethods answers 405 with Allow: the methods the router serves this path with, and HEAD
// wherever GET is (serveHEADAsGET).
func allowedMethods(router *mux.Router) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			var match mux.RouteMatch
			if m != r.Method && router.Match(probe, &match) && match.MatchErr == nil && match.Route.GetName() != wrongMethodRoute {
				allow = append(allow, m)
				if m == http.MethodGet {
					allow = append(allow, http.MethodHead)
				}
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		WriteError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}
