package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"funnel/commands"
	"funnel/domain"
	"funnel/projections"
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
	History     HistoryReader
	ReadModels  ReadModelWaiter
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
	root := mux.NewRouter()
	root.NotFoundHandler = http.HandlerFunc(notFound)
	root.MethodNotAllowedHandler = http.HandlerFunc(methodNotAllowed)
	s.health(root)

	onHost := root.MatcherFunc(s.isAPIHost).Subrouter()
	onHost.HandleFunc("/llms-full.txt", serveLLMs).Methods(http.MethodGet)
	v1 := onHost.PathPrefix("/api/v1").Subrouter()
	v1.NotFoundHandler = http.HandlerFunc(notFound)
	v1.MethodNotAllowedHandler = http.HandlerFunc(methodNotAllowed)
	v1.Use(s.authenticate)

	v1.Handle("/contacts", s.scoped(domain.ScopeContactsRead, s.listContacts)).Methods(http.MethodGet)
	v1.Handle("/contacts", s.scoped(domain.ScopeContactsWrite, s.upsertContact)).Methods(http.MethodPost)
	v1.Handle("/contacts/tags", s.scoped(domain.ScopeTagsWrite, s.tagContactByEmail)).Methods(http.MethodPost)
	v1.Handle("/contacts/{contactId}", s.scoped(domain.ScopeContactsRead, s.getContact)).Methods(http.MethodGet)
	v1.Handle("/contacts/{contactId}/tags", s.scoped(domain.ScopeTagsWrite, s.tagContactByID)).Methods(http.MethodPost)
	v1.Handle("/tags", s.scoped(domain.ScopeTagsRead, s.listTags)).Methods(http.MethodGet)

	v1.Handle("/crms", s.scoped(domain.ScopeCRMRead, s.listCRMs)).Methods(http.MethodGet)
	v1.Handle("/crms/{crmId}/stages", s.scoped(domain.ScopeCRMRead, s.listStages)).Methods(http.MethodGet)
	v1.Handle("/crms/{crmId}/leads", s.scoped(domain.ScopeCRMWrite, s.createLead)).Methods(http.MethodPost)
	v1.Handle("/crms/{crmId}/leads/{leadId}", s.scoped(domain.ScopeCRMWrite, s.updateLead)).Methods(http.MethodPatch)

	v1.Handle("/forms", s.scoped(domain.ScopeFormsRead, s.listForms)).Methods(http.MethodGet)
	v1.Handle("/forms/{formId}", s.scoped(domain.ScopeFormsRead, s.getForm)).Methods(http.MethodGet)
	v1.Handle("/forms/{formId}/submissions", s.scoped(domain.ScopeFormsWrite, s.submitForm)).Methods(http.MethodPost)

	v1.Handle("/scheduling/event-types", s.scoped(domain.ScopeSchedulingRead, s.listEventTypes)).Methods(http.MethodGet)
	v1.Handle("/scheduling/event-types/{eventTypeId}", s.scoped(domain.ScopeSchedulingRead, s.getEventType)).Methods(http.MethodGet)
	v1.Handle("/scheduling/{eventTypeId}/bookings", s.scoped(domain.ScopeSchedulingWrite, s.bookEvent)).Methods(http.MethodPost)

	return requestIDs(s.observe("api", root))
}

// OperatorHandler serves FUNNEL_ADMIN_ADDR: /admin/v1 with the operator token, /metrics, and
// the health endpoints.
func (s *Server) OperatorHandler() http.Handler {
	root := mux.NewRouter()
	root.NotFoundHandler = http.HandlerFunc(notFound)
	root.MethodNotAllowedHandler = http.HandlerFunc(methodNotAllowed)
	s.health(root)
	if s.deps.Metrics != nil {
		root.Handle("/metrics", s.deps.Metrics).Methods(http.MethodGet)
	}
	admin := root.PathPrefix("/admin/v1").Subrouter()
	admin.NotFoundHandler = http.HandlerFunc(notFound)
	admin.MethodNotAllowedHandler = http.HandlerFunc(methodNotAllowed)
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
	admin.HandleFunc("/accounts/{accountId}/crms", s.createCRM).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}/crms", s.listOperatorCRMs).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/crms/{crmId}/leads", s.listOperatorLeads).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/forms", s.createForm).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}/forms", s.listOperatorForms).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/forms/{formId}/submissions", s.listOperatorSubmissions).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/event-types", s.createEventType).Methods(http.MethodPost)
	admin.HandleFunc("/accounts/{accountId}/event-types", s.listOperatorEventTypes).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/event-types/{eventTypeId}/bookings", s.listOperatorBookings).Methods(http.MethodGet)
	admin.HandleFunc("/accounts/{accountId}/history", s.history).Methods(http.MethodGet)
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
