package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// ReadModelWaiter lets a write wait until the read models show it.
type ReadModelWaiter interface {
	WaitReadModels(ctx context.Context, pos int64) error
}

// HistoryReader reads an entity's history straight from the event log.
type HistoryReader interface {
	ReadContactHistory(ctx context.Context, accountID, contactID string) ([]domain.Recorded, error)
	ReadStreamHistory(ctx context.Context, accountID, streamID string) ([]domain.Recorded, error)
}

// HTTPObserver records every request (metrics).
type HTTPObserver interface {
	ObserveRequest(listener, route, method string, status int, took time.Duration)
}

// Deps are what the handlers need.
type Deps struct {
	Commands    commands.Handlers
	Accounts    *projections.Accounts
	Tags        *projections.Tags
	Contacts    *projections.Contacts
	CRMs        *projections.CRMs
	Leads       *projections.Leads
	Forms       *projections.Forms
	Submissions *projections.FormSubmissions
	EventTypes  *projections.EventTypes
	Bookings    *projections.Bookings
	// Webhooks: subscriptions and the delivery log kept by the webhook projector, and the
	// sample payloads of the REST Hook API.
	Subscriptions *webhooks.Subscriptions
	Deliveries    *webhooks.Deliveries
	Samples       *webhooks.Samples
	History       HistoryReader
	ReadModels    ReadModelWaiter
	// Ready reports whether migrations ran and the projections caught up at start (/readyz).
	Ready      func() bool
	APIHost    string
	AdminToken string
	Log        *zap.Logger
	HTTP       HTTPObserver
	Metrics    http.Handler
}

// Server holds the handlers of both listeners.
type Server struct {
	deps Deps
	log  *zap.Logger
}

// New builds the handlers.
func New(deps Deps) *Server {
	return &Server{deps: deps, log: deps.Log.Named("api")}
}

// Routes are registered with their full paths on flat routers, not on mux subrouters: a
// subrouter's routes inherit its matchers (the host, the path prefix), and in gorilla/mux v1.8.1
// an inherited matcher that matches clears the method mismatch an earlier route found, so a
// wrong method on a known path would answer 404 instead of 405.

// IntegrationHandler serves FUNNEL_ADDR: /api/v1 and /llms-full.txt on the API host only, and
// the health endpoints on any host.
func (s *Server) IntegrationHandler() http.Handler {
	root := mux.NewRouter()
	root.NotFoundHandler = http.HandlerFunc(notFound)
	root.MethodNotAllowedHandler = allowedMethods(root)
	s.health(root)
	root.MatcherFunc(s.isAPIHost).Handler(s.IntegrationRouter())
	return requestIDs(rejectUnsafeURLs(s.observe("api", root)))
}

// IntegrationRouter holds the routes served on the API host (tests walk them).
func (s *Server) IntegrationRouter() *mux.Router {
	onHost := mux.NewRouter()
	onHost.NotFoundHandler = http.HandlerFunc(notFound)
	onHost.MethodNotAllowedHandler = allowedMethods(onHost)
	onHost.Use(rememberRoute)
	onHost.HandleFunc("/llms-full.txt", serveLLMs).Methods(http.MethodGet)
	v1 := func(method, path string, scope domain.Scope, h http.HandlerFunc) {
		onHost.Handle("/api/v1"+path, s.authenticate(s.scoped(scope, h))).Methods(method)
	}

	v1(http.MethodGet, "/contacts", domain.ScopeContactsRead, s.listContacts)
	v1(http.MethodPost, "/contacts", domain.ScopeContactsWrite, s.upsertContact)
	v1(http.MethodPost, "/contacts/tags", domain.ScopeTagsWrite, s.tagContactByEmail)
	// Any other method on /contacts/tags would match /contacts/{contactId} with the id "tags".
	onHost.Handle("/api/v1/contacts/tags", allowedMethods(onHost)).Name(wrongMethodRoute)
	v1(http.MethodGet, "/contacts/{contactId}", domain.ScopeContactsRead, s.getContact)
	v1(http.MethodPost, "/contacts/{contactId}/tags", domain.ScopeTagsWrite, s.tagContactByID)
	v1(http.MethodGet, "/tags", domain.ScopeTagsRead, s.listTags)

	v1(http.MethodGet, "/crms", domain.ScopeCRMRead, s.listCRMs)
	v1(http.MethodGet, "/crms/{crmId}/stages", domain.ScopeCRMRead, s.listStages)
	v1(http.MethodPost, "/crms/{crmId}/leads", domain.ScopeCRMWrite, s.createLead)
	v1(http.MethodPatch, "/crms/{crmId}/leads/{leadId}", domain.ScopeCRMWrite, s.updateLead)

	v1(http.MethodGet, "/forms", domain.ScopeFormsRead, s.listForms)
	v1(http.MethodGet, "/forms/{formId}", domain.ScopeFormsRead, s.getForm)
	v1(http.MethodPost, "/forms/{formId}/submissions", domain.ScopeFormsWrite, s.submitForm)

	v1(http.MethodGet, "/scheduling/event-types", domain.ScopeSchedulingRead, s.listEventTypes)
	v1(http.MethodGet, "/scheduling/event-types/{eventTypeId}", domain.ScopeSchedulingRead, s.getEventType)
	v1(http.MethodPost, "/scheduling/{eventTypeId}/bookings", domain.ScopeSchedulingWrite, s.bookEvent)

	v1(http.MethodPost, "/webhooks/subscriptions", domain.ScopeWebhooksWrite, s.subscribeRESTHook)
	v1(http.MethodDelete, "/webhooks/subscriptions/{id}", domain.ScopeWebhooksWrite, s.unsubscribeRESTHook)
	v1(http.MethodGet, "/webhooks/events/{eventName}", domain.ScopeWebhooksWrite, s.sampleEvents)
	return onHost
}

// OperatorHandler serves FUNNEL_ADMIN_ADDR: /admin/v1 with the operator token, /metrics, and
// the health endpoints.
func (s *Server) OperatorHandler() http.Handler {
	root := mux.NewRouter()
	root.NotFoundHandler = http.HandlerFunc(notFound)
	root.MethodNotAllowedHandler = allowedMethods(root)
	s.health(root)
	if s.deps.Metrics != nil {
		root.Handle("/metrics", s.deps.Metrics).Methods(http.MethodGet)
	}
	admin := func(method, path string, h http.HandlerFunc) {
		root.Handle("/admin/v1"+path, s.operatorOnly(h)).Methods(method)
	}

	admin(http.MethodPost, "/accounts", s.createAccount)
	admin(http.MethodGet, "/accounts/{accountId}", s.getAccount)
	admin(http.MethodPost, "/accounts/{accountId}/api-keys", s.issueAPIKey)
	admin(http.MethodGet, "/accounts/{accountId}/api-keys", s.listAPIKeys)
	admin(http.MethodDelete, "/accounts/{accountId}/api-keys/{keyId}", s.revokeAPIKey)
	admin(http.MethodPost, "/accounts/{accountId}/custom-fields", s.defineCustomField)
	admin(http.MethodGet, "/accounts/{accountId}/custom-fields", s.listCustomFields)
	admin(http.MethodPost, "/accounts/{accountId}/tags", s.createTag)
	admin(http.MethodGet, "/accounts/{accountId}/tags", s.listOperatorTags)
	admin(http.MethodPost, "/accounts/{accountId}/crms", s.createCRM)
	admin(http.MethodGet, "/accounts/{accountId}/crms", s.listOperatorCRMs)
	admin(http.MethodGet, "/accounts/{accountId}/crms/{crmId}/leads", s.listOperatorLeads)
	admin(http.MethodPost, "/accounts/{accountId}/forms", s.createForm)
	admin(http.MethodGet, "/accounts/{accountId}/forms", s.listOperatorForms)
	admin(http.MethodGet, "/accounts/{accountId}/forms/{formId}/submissions", s.listOperatorSubmissions)
	admin(http.MethodPost, "/accounts/{accountId}/event-types", s.createEventType)
	admin(http.MethodGet, "/accounts/{accountId}/event-types", s.listOperatorEventTypes)
	admin(http.MethodGet, "/accounts/{accountId}/event-types/{eventTypeId}/bookings", s.listOperatorBookings)
	admin(http.MethodGet, "/accounts/{accountId}/history", s.history)
	admin(http.MethodPost, "/accounts/{accountId}/webhooks", s.createWebhook)
	admin(http.MethodGet, "/accounts/{accountId}/webhooks", s.listWebhooks)
	admin(http.MethodDelete, "/accounts/{accountId}/webhooks/{webhookId}", s.deleteWebhook)
	admin(http.MethodPost, "/accounts/{accountId}/webhooks/{webhookId}/rotate-secret", s.rotateWebhookSecret)
	admin(http.MethodGet, "/accounts/{accountId}/webhook-deliveries", s.listDeliveries)
	admin(http.MethodPost, "/accounts/{accountId}/webhook-deliveries/{deliveryId}/retry", s.retryDelivery)
	return requestIDs(rejectUnsafeURLs(s.observe("operator", root)))
}

func (s *Server) health(r *mux.Router) {
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, http.StatusOK, object{"status": "ok"})
	}).Methods(http.MethodGet)
	r.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.deps.Ready != nil && !s.deps.Ready() {
			writeBody(w, http.StatusServiceUnavailable, object{"status": "starting"})
			return
		}
		writeBody(w, http.StatusOK, object{"status": "ready"})
	}).Methods(http.MethodGet)
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusNotFound, "not found")
}

// wrongMethodRoute names a route that answers 405 for every method of a path that a broader
// route (a path variable) would otherwise serve.
const wrongMethodRoute = "wrong-method"

// allowedMethods answers 405 with Allow: the methods the router serves this path with.
func allowedMethods(router *mux.Router) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			var match mux.RouteMatch
			if m != r.Method && router.Match(probe, &match) && match.MatchErr == nil && match.Route.GetName() != wrongMethodRoute {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}
