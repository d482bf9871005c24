package integration

import (
	"errors"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/webhooks"
)

// subscribeRESTHook serves POST /api/v1/webhooks/subscriptions.
func (s *Server) subscribeRESTHook(w http.ResponseWriter, r *http.Request) {
	s.subscriptions.Create(w, r, httpapi.NewWebhookSubscription{
		Meta: principalOf(r.Context()).meta(r),
		Kind: domain.WebhookKindRESTHook,
		Created: func(sub webhooks.Subscription, secret string) any {
			return wire.WebhookSubscriptionCreated{Success: true, Subscription: subscriptionView(sub, secret)}
		},
	})
}

// unsubscribeRESTHook serves DELETE /api/v1/webhooks/subscriptions/{id}.
func (s *Server) unsubscribeRESTHook(w http.ResponseWriter, r *http.Request) {
	s.subscriptions.Delete(w, r, commands.DeleteWebhookSubscription{
		Meta: principalOf(r.Context()).meta(r), SubscriptionID: mux.Vars(r)["id"], RESTHookOnly: true,
	})
}

// sampleEvents serves GET /api/v1/webhooks/events/{eventName}: samples from the account's real
// events for a key that may read their data, made-up ones for any other.
func (s *Server) sampleEvents(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	events, err := s.deps.Webhooks.Samples.For(r.Context(), p.accountID(), mux.Vars(r)["eventName"], p.key.HasScope)
	if errors.Is(err, webhooks.ErrUnknownEvent) {
		httpapi.WriteError(w, http.StatusNotFound, "unknown event type")
		return
	}
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	answer := wire.SampleEvents{Success: true, Events: make([]wire.WebhookEvent, len(events))}
	for i, e := range events {
		if answer.Events[i], err = e.Wire(); err != nil {
			httpapi.Fail(w, r, err)
			return
		}
	}
	httpapi.Answer(w, http.StatusOK, answer)
}

// webhookRoutes registers the routes of REST Hook subscriptions, their deliveries and the samples (handlers here and in webhook_self_service.go) (Router, server.go).
func (s *Server) webhookRoutes(v1 routes) {
	v1.add(http.MethodGet, "/webhooks/subscriptions", domain.ScopeWebhooksRead, s.listWebhookSubscriptions)
	v1.add(http.MethodPost, "/webhooks/subscriptions", domain.ScopeWebhooksWrite, s.subscribeRESTHook)
	v1.add(http.MethodGet, "/webhooks/subscriptions/{id}/deliveries", domain.ScopeWebhooksRead, s.listSubscriptionDeliveries)
	v1.add(http.MethodPost, "/webhooks/subscriptions/{id}/replay", domain.ScopeWebhooksWrite, s.replaySubscription)
	v1.add(http.MethodPost, "/webhooks/subscriptions/{id}/test", domain.ScopeWebhooksWrite, s.testSubscription)
	v1.add(http.MethodPost, "/webhooks/subscriptions/{id}/enable", domain.ScopeWebhooksWrite, s.enableSubscription)
	v1.add(http.MethodDelete, "/webhooks/subscriptions/{id}", domain.ScopeWebhooksWrite, s.unsubscribeRESTHook)
	v1.add(http.MethodGet, "/webhooks/events/{eventName}", domain.ScopeWebhooksWrite, s.sampleEvents)
}
