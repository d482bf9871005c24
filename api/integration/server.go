// Package integration serves the integration API (integration-api.md): /api/v1 for integrators,
// authenticated with API keys and limited by their scopes, its OpenAPI document and
// /llms-full.txt, its reference for machines (both from api/openapi), on FUNNEL_API_HOST; and the health endpoints on any host. Handlers decode and
// validate a request, call a command or a read-model query, and answer in the shapes of the
// contract.
package integration

import (
	"net"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/openapi"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// Deps are what the handlers need: the commands, the read side, and what every API shares.
type Deps struct {
	Commands commands.Handlers
	// Read are the read models; their look-ups take the requesting account and answer 404 or
	// 403 themselves.
	Read projections.Queries
	// Webhooks reads the REST Hook subscriptions the webhook projector keeps, and the samples.
	Webhooks webhooks.Queries
	// Keys finds the API key a request presents, by the hash of its secret.
	Keys    *projections.APIKeyAuthenticator
	Runtime httpapi.Runtime
	// APIHost is FUNNEL_API_HOST: /api/v1 answers for this host only, whatever the port. New
	// reads it as HostName reads a request's Host, so a value given with a port or a stray space
	// still names the host.
	APIHost string
	// RateLimits decides on /api/v1 requests under Limits; nil applies none (FUNNEL_RATE_LIMITS=off).
	RateLimits *httpapi.RateLimits
	Limits     Limits
}

// Server holds the handlers of the integration API.
type Server struct {
	deps          Deps
	apiHost       string // HostName(deps.APIHost)
	limits        *httpapi.RateLimits
	subscriptions httpapi.Subscriptions
}

// New builds the handlers.
func New(deps Deps) *Server {
	return &Server{deps: deps, apiHost: HostName(deps.APIHost), limits: deps.RateLimits, subscriptions: httpapi.Subscriptions{
		Commands: deps.Commands, Read: deps.Webhooks.Subscriptions, ReadModels: deps.Runtime.ReadModels,
	}}
}

// Handler serves FUNNEL_ADDR: /api/v1 and /llms-full.txt on the API host only, and the health
// endpoints on any host. The rate limits apply to /api/v1 on the API host, unknown paths
// included.
func (s *Server) Handler() http.Handler {
	root := httpapi.NewRouter()
	httpapi.AddHealth(root, s.deps.Runtime.Ready)
	root.MatcherFunc(s.isAPIHost).Handler(s.Router())
	return httpapi.Listener{Name: "api", Log: s.deps.Runtime.Log, Observer: s.deps.Runtime.Observer, Unavailable: s.deps.Runtime.Unavailable, Limit: s.limitAddresses}.Handler(root)
}

// Router holds the routes served on the API host (tests walk them).
func (s *Server) Router() *mux.Router {
	onHost := httpapi.NewRouter()
	onHost.Handle("/llms-full.txt", openapi.Serve("text/plain; charset=utf-8", openapi.LLMsFull())).Methods(http.MethodGet)
	// The OpenAPI document needs no key: integrators' tools fetch it before they have one.
	onHost.Handle("/api/v1/openapi.json", openapi.Serve("application/json; charset=utf-8", openapi.Integration())).Methods(http.MethodGet)
	v1 := routes{router: onHost, add: func(method, path string, scope domain.Scope, h http.HandlerFunc) {
		onHost.Handle("/api/v1"+path, s.authenticate(s.limitAccount(method, path, scoped(scope, httpapi.Idempotent(s.deps.Runtime.Idempotency, accountScope, h))))).Methods(method)
	}}
	// Each area registers its routes in its own file, beside their handlers. The contacts' come
	// after the tags', whose /contacts/tags must be refused other methods before the contact
	// routes' {contactId} would read "tags" as an id.
	for _, area := range []func(routes){
		s.tagRoutes, s.contactRoutes, s.crmRoutes, s.formRoutes, s.schedulingRoutes,
		s.productRoutes, s.customerRoutes, s.activationRoutes, s.eventRoutes, s.webhookRoutes,
	} {
		area(v1)
	}
	return onHost
}

// routes registers the /api/v1 routes of one area (each area's file has its own function, which
// Router calls): add serves path under /api/v1 with its method and the scope it requires, and
// authentication, the scope check, the rate limits and Idempotency-Key come with it.
type routes struct {
	router *mux.Router
	add    func(method, path string, scope domain.Scope, h http.HandlerFunc)
}

// isAPIHost matches requests for FUNNEL_API_HOST, whatever the port and the case.
func (s *Server) isAPIHost(r *http.Request, _ *mux.RouteMatch) bool {
	return HostName(r.Host) == s.apiHost
}

// HostName is the host name of a Host header or of FUNNEL_API_HOST, as the two are compared:
// without spaces around it, without its port (an IPv6 literal without its brackets), in lower
// case. FUNNEL_API_HOST is read the same way as a request's Host, so that one configured as the
// load balancer's host:port, or with a stray space, still matches its requests instead of none.
func HostName(host string) string {
	host = strings.TrimSpace(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}
