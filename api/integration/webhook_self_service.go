package integration

import (
	"errors"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
	"github.com/funnelhq/funnel/webhooks"
)

// The integrator's own webhooks (decisions.md "Subscriptions, deliveries, replay, test"): every
// subscription of the account with its status, each one's delivery log, a replay of a window,
// a test send, and enabling one that was disabled.

// selfServiceSubscriptionView is a subscription as the self-service endpoints show it: the REST
// Hook view without its secret, and its kind and status.
func selfServiceSubscriptionView(s webhooks.Subscription) wire.WebhookSubscriptionStatus {
	hook := subscriptionView(s, "")
	v := wire.WebhookSubscriptionStatus{
		Id: hook.Id, Url: hook.Url, Events: hook.Events, Filters: hook.Filters, CreatedAt: hook.CreatedAt,
		Kind: wire.WebhookSubscriptionStatusKind(s.Kind), Status: wire.WebhookSubscriptionStatusStatus(s.Status),
	}
	if reason := s.DisabledReason(); reason != "" {
		code := wire.WebhookSubscriptionStatusDisabledReason(reason)
		v.DisabledReason = &code
	}
	return v
}

// listWebhookSubscriptions serves GET /api/v1/webhooks/subscriptions: REST hooks and those made
// in the app alike, oldest first.
func (s *Server) listWebhookSubscriptions(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "subscriptions", func(page paging.Page) ([]webhooks.Subscription, string, error) {
		return s.deps.Webhooks.Subscriptions.List(r.Context(), principalOf(r.Context()).accountID(), "", page)
	}, selfServiceSubscriptionView)
}

// deliveryView is one delivery of the integrator's delivery log; nextAttemptAt is null once it
// is no longer pending.
func deliveryView(d webhooks.Delivery) wire.WebhookDelivery {
	v := wire.WebhookDelivery{
		Id: d.ID, EventId: d.EventID, EventType: wire.EventName(d.EventType), Status: wire.WebhookDeliveryStatus(d.Status),
		Attempts: make([]wire.DeliveryAttempt, len(d.Attempts)),
	}
	for i, a := range d.Attempts {
		v.Attempts[i] = wire.DeliveryAttempt{At: wire.At(a.At), StatusCode: a.StatusCode, Error: a.Error, DurationMs: a.DurationMs}
	}
	if d.Status == "pending" {
		next := wire.At(d.NextAttemptAt)
		v.NextAttemptAt = &next
	}
	return v
}

// listSubscriptionDeliveries serves GET /api/v1/webhooks/subscriptions/{id}/deliveries?status=:
// newest first.
func (s *Server) listSubscriptionDeliveries(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	httpapi.WritePage(w, r, "deliveries", func(page paging.Page) ([]webhooks.Delivery, string, error) {
		return s.deps.Webhooks.SelfService.Deliveries(r.Context(), p.accountID(), mux.Vars(r)["id"], r.URL.Query().Get("status"), page)
	}, deliveryView)
}

// replaySubscription serves POST /api/v1/webhooks/subscriptions/{id}/replay: the operator API's
// replay of a window is the same endpoint (httpapi.ReplayWindow).
func (s *Server) replaySubscription(w http.ResponseWriter, r *http.Request) {
	httpapi.ReplayWindow(w, r, s.deps.Webhooks.SelfService, principalOf(r.Context()).accountID(), mux.Vars(r)["id"])
}

// testSubscription serves POST /api/v1/webhooks/subscriptions/{id}/test: one sample event sent
// now, and the attempt's outcome whatever the receiver answered.
func (s *Server) testSubscription(w http.ResponseWriter, r *http.Request) {
	var req wire.TestSendRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.Type == "" {
		httpapi.WriteCodedError(w, domain.CodeInvalidRequest, "type", "type is required")
		return
	}
	p := principalOf(r.Context())
	attempt, err := s.deps.Webhooks.SelfService.Test(r.Context(), webhooks.TestRequest{
		AccountID: p.accountID(), SubscriptionID: mux.Vars(r)["id"], Type: string(req.Type), CanRead: p.key.HasScope,
	})
	if errors.Is(err, webhooks.ErrUnknownEvent) {
		httpapi.WriteCodedError(w, domain.CodeInvalidRequest, "type", "type: unknown event type")
		return
	}
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	answer := wire.TestSendResult{Success: true}
	answer.Attempt.StatusCode, answer.Attempt.Error, answer.Attempt.DurationMs = attempt.StatusCode, attempt.Error, attempt.DurationMs
	httpapi.Answer(w, http.StatusOK, answer)
}

// enableSubscription serves POST /api/v1/webhooks/subscriptions/{id}/enable: a disabled
// subscription receives deliveries again (what it missed is sent by a replay, not by this).
func (s *Server) enableSubscription(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	id := mux.Vars(r)["id"]
	pos, err := s.deps.Commands.EnableWebhookSubscription.Handle(r.Context(), commands.EnableWebhookSubscription{Meta: p.meta(r), SubscriptionID: id})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, pos) {
		return
	}
	sub, err := s.deps.Webhooks.SelfService.Subscription(r.Context(), p.accountID(), id)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.WebhookSubscriptionStatusResponse{Success: true, Subscription: selfServiceSubscriptionView(sub)})
}
