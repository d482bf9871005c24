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
	APIHost string // FUNNEL_API_HOST: /api/v1 answers for this host only, whatever the port
	// RateLimits decides on /api/v1 requests under Limits; nil applies none (FUNNEL_RATE_LIMITS=off).
	RateLimits *httpapi.RateLimits
	Limits     Limits
}

// Server holds the handlers of the integration API.
type Server struct {
	deps          Deps
	limits        *httpapi.RateLimits
	subscriptions httpapi.Subscriptions
}

// New builds the handlers.
func New(deps Deps) *Server {
	return &Server{deps: deps, limits: deps.RateLimits, subscriptions: httpapi.Subscriptions{
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
	v1 := func(method, path string, scope domain.Scope, h http.HandlerFunc) {
		onHost.Handle("/api/v1"+path, s.authenticate(s.limitAccount(method, path, scoped(scope, httpapi.Idempotent(s.deps.Runtime.Idempotency, accountScope, h))))).Methods(method)
	}

	v1(http.MethodGet, "/contacts", domain.ScopeContactsRead, s.listContacts)
	v1(http.MethodPost, "/contacts", domain.ScopeContactsWrite, s.upsertContact)
	v1(http.MethodPost, "/contacts/tags", domain.ScopeTagsWrite, s.tagContactByEmail)
	// Any other method on /contacts/tags would match /contacts/{contactId} with the id "tags".
	httpapi.RefuseOtherMethods(onHost, "/api/v1/contacts/tags")
	v1(http.MethodGet, "/contacts/{contactId}", domain.ScopeContactsRead, s.getContact)
	v1(http.MethodDelete, "/contacts/{contactId}", domain.ScopeContactsErase, s.eraseContact)
	v1(http.MethodPost, "/contacts/{contactId}/tags", domain.ScopeTagsWrite, s.tagContactByID)
	v1(http.MethodGet, "/tags", domain.ScopeTagsRead, s.listTags)
	v1(http.MethodGet, "/custom-fields", domain.ScopeContactsRead, s.listCustomFields)

	v1(http.MethodGet, "/crms", domain.ScopeCRMRead, s.listCRMs)
	v1(http.MethodGet, "/crms/{crmId}/stages", domain.ScopeCRMRead, s.listStages)
	v1(http.MethodGet, "/crms/{crmId}/leads", domain.ScopeCRMRead, s.listLeads)
	v1(http.MethodPost, "/crms/{crmId}/leads", domain.ScopeCRMWrite, s.createLead)
	v1(http.MethodGet, "/crms/{crmId}/leads/{leadId}", domain.ScopeCRMRead, s.getLead)
	v1(http.MethodPatch, "/crms/{crmId}/leads/{leadId}", domain.ScopeCRMWrite, s.updateLead)

	v1(http.MethodGet, "/forms", domain.ScopeFormsRead, s.listForms)
	v1(http.MethodGet, "/forms/{formId}", domain.ScopeFormsRead, s.getForm)
	v1(http.MethodPost, "/forms/{formId}/submissions", domain.ScopeFormsWrite, s.submitForm)

	v1(http.MethodGet, "/scheduling/event-types", domain.ScopeSchedulingRead, s.listEventTypes)
	v1(http.MethodGet, "/scheduling/event-types/{eventTypeId}", domain.ScopeSchedulingRead, s.getEventType)
	v1(http.MethodPost, "/scheduling/{eventTypeId}/bookings", domain.ScopeSchedulingWrite, s.bookEvent)

	v1(http.MethodGet, "/products", domain.ScopeCheckoutRead, s.listProducts)
	v1(http.MethodGet, "/products/{productId}", domain.ScopeCheckoutRead, s.getProduct)
	v1(http.MethodGet, "/customers", domain.ScopeCheckoutRead, s.listCustomers)
	v1(http.MethodGet, "/customers/{customerId}", domain.ScopeCheckoutRead, s.getCustomer)
	v1(http.MethodGet, "/checkout/activations/{token}", domain.ScopeCheckoutRead, s.validateActivation)
	v1(http.MethodPost, "/checkout/activations/{token}/complete", domain.ScopeCheckoutWrite, s.completeActivation)

	v1(http.MethodGet, "/events", domain.ScopeEventsRead, s.listEvents)

	v1(http.MethodGet, "/webhooks/subscriptions", domain.ScopeWebhooksRead, s.listWebhookSubscriptions)
	v1(http.MethodPost, "/webhooks/subscriptions", domain.ScopeWebhooksWrite, s.subscribeRESTHook)
	v1(http.MethodGet, "/webhooks/subscriptions/{id}/deliveries", domain.ScopeWebhooksRead, s.listSubscriptionDeliveries)
	v1(http.MethodPost, "/webhooks/subscriptions/{id}/replay", domain.ScopeWebhooksWrite, s.replaySubscription)
	v1(http.MethodPost, "/webhooks/subscriptions/{id}/test", domain.ScopeWebhooksWrite, s.testSubscription)
	v1(http.MethodPost, "/webhooks/subscriptions/{id}/enable", domain.ScopeWebhooksWrite, s.enableSubscription)
	v1(http.MethodDelete, "/webhooks/subscriptions/{id}", domain.ScopeWebhooksWrite, s.unsubscribeRESTHook)
	v1(http.MethodGet, "/webhooks/events/{eventName}", domain.ScopeWebhooksWrite, s.sampleEvents)
	return onHost
}

// isAPIHost matches requests for FUNNEL_API_HOST, whatever the port.
func (s *Server) isAPIHost(r *http.Request, _ *mux.RouteMatch) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.EqualFold(host, s.deps.APIHost)
}
