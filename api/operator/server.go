// Package operator serves the operator API (operator-api.md) on FUNNEL_ADMIN_ADDR: /admin/v1,
// with which the app side configures accounts, authenticated with the operator token, and its
// OpenAPI document (api/openapi); /metrics for Prometheus; and the health endpoints. Handlers decode and validate a request, call a
// command or a read-model query, and answer in the shapes of the contract.
package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/console"
	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/openapi"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// Deps are what the handlers need: the commands, the read side, and what every API shares.
type Deps struct {
	Commands commands.Handlers
	// Read are the read models; their look-ups take the account in the path and answer 404 or
	// 403 themselves.
	Read projections.Queries
	// Webhooks reads the webhook subscriptions and the delivery log.
	Webhooks webhooks.Queries
	// History reads an entity's history straight from the event log.
	History History
	// Projections tells how far the read models are and rebuilds one.
	Projections Projections
	Runtime     httpapi.Runtime
	AdminToken  string       // FUNNEL_ADMIN_TOKEN: the bearer token of every /admin/v1 request
	Metrics     http.Handler // serves GET /metrics; nil serves none
	// Cluster lists the processes sharing the database (GET /admin/v1/cluster); nil serves none.
	Cluster Cluster
}

// Server holds the handlers of the operator API.
type Server struct {
	deps          Deps
	subscriptions httpapi.Subscriptions
}

// New builds the handlers.
func New(deps Deps) *Server {
	return &Server{deps: deps, subscriptions: httpapi.Subscriptions{
		Commands: deps.Commands, Read: deps.Webhooks.Subscriptions, ReadModels: deps.Runtime.ReadModels,
	}}
}

// Handler serves FUNNEL_ADMIN_ADDR: /admin/v1 with the operator token, its OpenAPI document,
// /metrics, and the health endpoints.
func (s *Server) Handler() http.Handler {
	return httpapi.Listener{Name: "operator", Log: s.deps.Runtime.Log, Observer: s.deps.Runtime.Observer, Unavailable: s.deps.Runtime.Unavailable}.Handler(s.Router())
}

// Router holds every route of the operator listener (tests walk them).
func (s *Server) Router() *mux.Router {
	root := httpapi.NewRouter()
	httpapi.AddHealth(root, s.deps.Runtime.Ready)
	if s.deps.Metrics != nil {
		root.Handle("/metrics", s.deps.Metrics).Methods(http.MethodGet)
	}
	// The document needs no token, like /metrics: it holds no secret, and tools fetch it before
	// they are given one.
	root.Handle("/admin/v1/openapi.json", openapi.Serve("application/json; charset=utf-8", openapi.Operator())).Methods(http.MethodGet)
	// The console's pages need no token: they hold no data, and ask the person for the token.
	console.Mount(root)
	scope := tokenScope(s.deps.AdminToken)
	admin := func(method, path string, h http.HandlerFunc) {
		root.Handle("/admin/v1"+path, s.operatorOnly(s.accountInPath(httpapi.Idempotent(s.deps.Runtime.Idempotency, scope, h)))).Methods(method)
	}

	if s.deps.Cluster != nil {
		admin(http.MethodGet, "/cluster", s.cluster)
	}
	// Each area registers its routes in its own file, beside their handlers.
	for _, area := range []func(routes){
		s.accountRoutes, s.catalogueRoutes, s.contactRoutes, s.crmRoutes, s.formRoutes, s.schedulingRoutes,
		s.productRoutes, s.checkoutRoutes, s.historyRoutes, s.webhookRoutes, s.projectionRoutes,
	} {
		area(admin)
	}
	return root
}

// routes registers one /admin/v1 route of an area (each area's file has its own function, which
// Router calls): the operator token, the account in the path and Idempotency-Key come with it.
type routes func(method, path string, h http.HandlerFunc)
