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
	// Webhooks reads the webhook subscriptions and the delivery log, and replays a window of
	// events to a subscription (SelfService, as the integration API does).
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
	admin(http.MethodGet, "/accounts", s.listAccounts)
	admin(http.MethodPost, "/accounts", s.createAccount)
	admin(http.MethodGet, "/accounts/{accountId}", s.getAccount)
	admin(http.MethodPost, "/accounts/{accountId}/api-keys", s.issueAPIKey)
	admin(http.MethodGet, "/accounts/{accountId}/api-keys", s.listAPIKeys)
	admin(http.MethodDelete, "/accounts/{accountId}/api-keys/{keyId}", s.revokeAPIKey)
	admin(http.MethodPost, "/accounts/{accountId}/custom-fields", s.defineCustomField)
	admin(http.MethodGet, "/accounts/{accountId}/custom-fields", s.listCustomFields)
	admin(http.MethodGet, "/accounts/{accountId}/contacts", s.listContacts)
	admin(http.MethodGet, "/accounts/{accountId}/contacts/{contactId}", s.getContact)
	admin(http.MethodPost, "/accounts/{accountId}/tags", s.createTag)
	admin(http.MethodPost, "/accounts/{accountId}/contacts/{contactId}/erase", s.eraseContact)
	admin(http.MethodGet, "/accounts/{accountId}/contacts/{contactId}/export", s.exportContact)
	admin(http.MethodGet, "/accounts/{accountId}/tags", s.listTags)
	admin(http.MethodPost, "/accounts/{accountId}/crms", s.createCRM)
	admin(http.MethodGet, "/accounts/{accountId}/crms", s.listCRMs)
	admin(http.MethodGet, "/accounts/{accountId}/crms/{crmId}/leads", s.listLeads)
	admin(http.MethodPost, "/accounts/{accountId}/forms", s.createForm)
	admin(http.MethodGet, "/accounts/{accountId}/forms", s.listForms)
	admin(http.MethodGet, "/accounts/{accountId}/forms/{formId}/submissions", s.listSubmissions)
	admin(http.MethodPost, "/accounts/{accountId}/event-types", s.createEventType)
	admin(http.MethodGet, "/accounts/{accountId}/event-types", s.listEventTypes)
	admin(http.MethodGet, "/accounts/{accountId}/event-types/{eventTypeId}/bookings", s.listBookings)
	admin(http.MethodPost, "/accounts/{accountId}/products", s.createProduct)
	admin(http.MethodGet, "/accounts/{accountId}/products", s.listProducts)
	admin(http.MethodGet, "/accounts/{accountId}/products/{productId}", s.getProduct)
	admin(http.MethodPost, "/accounts/{accountId}/checkout/purchases", s.purchase)
	admin(http.MethodPost, "/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/rebill", s.rebill)
	admin(http.MethodPost, "/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/cancel", s.cancelSubscription)
	admin(http.MethodPost, "/accounts/{accountId}/checkout/transactions/{transactionId}/refund", s.refund)
	admin(http.MethodGet, "/accounts/{accountId}/history", s.history)
	admin(http.MethodPost, "/accounts/{accountId}/webhooks", s.createWebhook)
	admin(http.MethodGet, "/accounts/{accountId}/webhooks", s.listWebhooks)
	admin(http.MethodDelete, "/accounts/{accountId}/webhooks/{webhookId}", s.deleteWebhook)
	admin(http.MethodPost, "/accounts/{accountId}/webhooks/{webhookId}/rotate-secret", s.rotateWebhookSecret)
	admin(http.MethodPost, "/accounts/{accountId}/webhooks/{webhookId}/replay", s.replayWebhook)
	admin(http.MethodGet, "/accounts/{accountId}/webhook-deliveries", s.listDeliveries)
	admin(http.MethodPost, "/accounts/{accountId}/webhook-deliveries/{deliveryId}/retry", s.retryDelivery)
	admin(http.MethodGet, "/projections", s.listProjections)
	admin(http.MethodPost, "/projections/{name}/rebuild", s.rebuildProjection)
	return root
}
