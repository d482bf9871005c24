package operator

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
	"github.com/funnelhq/funnel/webhooks"
)

// webhookView is a subscription as the operator API shows it, with its kind and status.
func webhookView(s webhooks.Subscription) httpapi.Object {
	v := httpapi.SubscriptionView(s)
	v["kind"], v["status"] = s.Kind, s.Status
	if s.StatusReason != "" {
		v["statusReason"] = s.StatusReason
	}
	return v
}

// createWebhook serves POST /admin/v1/accounts/{accountId}/webhooks (custom, zapier or make).
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	s.subscriptions.Create(w, r, httpapi.NewWebhookSubscription{
		Meta:         operatorMeta(r),
		Kind:         domain.WebhookKindCustom,
		KindFromBody: true,
		Member:       "webhook",
		View:         webhookView,
	})
}

// listWebhooks serves GET /admin/v1/accounts/{accountId}/webhooks, REST Hook subscriptions
// included; ?kind= lists one kind.
func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	kind := r.URL.Query().Get("kind")
	if kind != "" && !slices.Contains(domain.WebhookKinds, kind) {
		httpapi.WriteFieldError(w, "kind", "kind must be one of "+strings.Join(domain.WebhookKinds, ", "))
		return
	}
	httpapi.WritePage(w, r, "webhooks", func(page paging.Page) ([]webhooks.Subscription, string, error) {
		return s.deps.Webhooks.Subscriptions.List(r.Context(), account.ID, kind, page)
	}, webhookView)
}

// deleteWebhook serves DELETE /admin/v1/accounts/{accountId}/webhooks/{webhookId}.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	s.subscriptions.Delete(w, r, commands.DeleteWebhookSubscription{Meta: operatorMeta(r), SubscriptionID: mux.Vars(r)["webhookId"]})
}

// rotateWebhookSecret serves POST /admin/v1/accounts/{accountId}/webhooks/{webhookId}/rotate-secret.
func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["webhookId"]
	res, err := s.deps.Commands.RotateWebhookSecret.Handle(r.Context(), commands.RotateWebhookSecret{Meta: operatorMeta(r), SubscriptionID: id})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	sub, err := s.deps.Webhooks.Subscriptions.Get(r.Context(), accountOf(r).ID, id)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	v := webhookView(sub)
	v["secret"] = res.Secret
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{"webhook": v})
}

func deliveryView(d webhooks.Delivery) httpapi.Object {
	attempts := make([]httpapi.Object, len(d.Attempts))
	for i, a := range d.Attempts {
		attempts[i] = httpapi.Object{"at": wire.Time(a.At), "statusCode": a.StatusCode, "error": a.Error, "durationMs": a.DurationMs}
	}
	v := httpapi.Object{"id": d.ID, "eventId": d.EventID, "eventType": d.EventType, "webhookId": d.WebhookID, "status": d.Status,
		"attempts": attempts, "createdAt": wire.Time(d.CreatedAt)}
	if d.Status == "pending" {
		v["nextAttemptAt"] = wire.Time(d.NextAttemptAt)
	}
	if d.LastError != "" {
		v["lastError"] = d.LastError
	}
	return v
}

// listDeliveries serves GET /admin/v1/accounts/{accountId}/webhook-deliveries?webhookId=&status=.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	filter := webhooks.DeliveryFilter{WebhookID: r.URL.Query().Get("webhookId"), Status: r.URL.Query().Get("status")}
	switch filter.Status {
	case "", "pending", "succeeded", "failed":
	default:
		httpapi.WriteFieldError(w, "status", "status must be pending, succeeded or failed")
		return
	}
	httpapi.WritePage(w, r, "deliveries", func(page paging.Page) ([]webhooks.Delivery, string, error) {
		return s.deps.Webhooks.Deliveries.List(r.Context(), account.ID, filter, page)
	}, deliveryView)
}

// retryDelivery serves POST /admin/v1/accounts/{accountId}/webhook-deliveries/{deliveryId}/retry:
// the delivery is sent again now, with the same ids and body.
func (s *Server) retryDelivery(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	d, err := s.deps.Webhooks.Deliveries.Retry(r.Context(), account.ID, mux.Vars(r)["deliveryId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{"delivery": deliveryView(d)})
}
