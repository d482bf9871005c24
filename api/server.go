package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"funnel/commands"
	"funnel/domain"
	"funnel/projections"
	"funnel/webhooks"
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
	Commands commands.Handlers
	Accounts *projections.Accounts
	Tags     *projections.Tags
	Contacts *projections.Contacts
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

// IntegrationHandler serves FUNNEL_ADDR: /api/v1 and /llms-full.txt on the API host only, and
// the health endpoints on any host.
func (s *Server) IntegrationHandler() http.Handler {
	return requestIDs(s.observe("api", s.IntegrationRouter()))
}

// IntegrationRouter is the router of the integration API, for IntegrationHandler and for tests
// that walk its routes.
func (s *Server) IntegrationRouter() *mux.Router {
	root := mux.NewRouter()
	root.NotFoundHandler = allowedMethods(root)
	root.MethodNotAllowedHandler = http.HandlerFunc(methodNotAllowed)
	s.health(root)

	onHost := root.MatcherFunc(s.isAPIHost).Subrouter()
	onHost.HandleFunc("/llms-full.txt", serveLLMs).Methods(http.MethodGet)
	v1 := onHost.PathPrefix("/api/v1").Subrouter()
	v1.Use(s.authenticate)

	v1.Handle("/contacts", s.scoped(domain.ScopeContactsRead, s.listContacts)).Methods(http.MethodGet)
	v1.Handle("/contacts", s.scoped(domain.ScopeContactsWrite, s.upsertContact)).Methods(http.MethodPost)
	v1.Handle("/contacts/tags", s.scoped(domain.ScopeTagsWrite, s.tagContactByEmail)).Methods(http.MethodPost)
	v1.Handle("/contacts/{contactId}", s.scoped(domain.ScopeContactsRead, s.getContact)).Methods(http.MethodGet)
	v1.Handle("/contacts/{contactId}/tags", s.scoped(domain.ScopeTagsWrite, s.tagContactByID)).Methods(http.MethodPost)
	v1.Handle("/tags", s.scoped(domain.ScopeTagsRead, s.listTags)).Methods(http.MethodGet)
	v1.Handle("/webhooks/subscriptions", s.scoped(domain.ScopeWebhooksWrite, s.subscribeRESTHook)).Methods(http.MethodPost)
	v1.Handle("/webhooks/subscriptions/{id}", s.scoped(domain.ScopeWebhooksWrite, s.unsubscribeRESTHook)).Methods(http.MethodDelete)
	v1.Handle("/webhooks/events/{eventName}", s.scoped(domain.ScopeWebhooksWrite, s.sampleEvents)).Methods(http.MethodGet)

	return root
}

// OperatorHandler serves FUNNEL_ADMIN_ADDR: /admin/v1 with the operator token, /metrics, and
// the health endpoints.
func (s *Server) OperatorHandler() http.Handler {
	root := mux.NewRouter()
	root.NotFoundHandler = allowedMethods(root)
	root.MethodNotAllowedHandler = http.HandlerFunc(methodNotAllowed)
	s.health(root)
	if s.deps.Metrics != nil {
		root.Handle("/metrics", s.deps.Metrics).Methods(http.MethodGet)
	}
	admin := root.PathPrefix("/admin/v1").Subrouter()
	admin.Use(s.operatorOnly)

	admin.HandleFunc("/accounts", s.createAccount).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}", s.getAccount).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/api-keys", s.issueAPIKey).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}/api-keys", s.listAPIKeys).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/api-keys/{keyId}", s.revokeAPIKey).Methods(http.MethodDelete)
	admin.HandleFunc("/accounts/{accountId}/custom-fields", s.defineCustomField).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}/custom-fields", s.listCustomFields).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/tags", s.createTag).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}/tags", s.listOperatorTags).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/history", s.history).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/webhooks", s.createWebhook).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}/webhooks", s.listWebhooks).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/webhooks/{webhookId}", s.deleteWebhook).Methods(http.MethodDelete)
	admin.HandleFunc("/accounts/{accountId}/webhooks/{webhookId}/rotate-secret", s.rotateWebhookSecret).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}/webhook-deliveries", s.listDeliveries).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/webhook-deliveries/{deliveryId}/retry", s.retryDelivery).Methods(http.MethodPost)
	return requestIDs(s.observe("operator", root))
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

func methodNotAllowed(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusMethodNotAllowed, "method not allowed")
}

// allowedMethods answers 405, with Allow, for a path that some route serves with another method,
// and 404 otherwise. gorilla/mux cannot tell these apart by itself inside subrouters: a later
// route's prefix match clears the method mismatch an earlier route found.
func allowedMethods(router *mux.Router) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if m == r.Method {
				continue
			}
			probe := r.Clone(r.Context())
			probe.Method = m
			var match mux.RouteMatch
			if router.Match(probe, &match) && match.MatchErr == nil {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			notFound(w, r)
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		methodNotAllowed(w, r)
	}
}
