package operator

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
	"github.com/funnelhq/funnel/webhooks"
)

// createWebhook serves POST /admin/v1/accounts/{accountId}/webhooks (custom, zapier or make).
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	s.subscriptions.Create(w, r, httpapi.NewWebhookSubscription{
		Meta:         operatorMeta(r),
		Kind:         domain.WebhookKindCustom,
		KindFromBody: true,
		Created: func(sub webhooks.Subscription, secret string) any {
			return admin.WebhookWithSecretResponse{Success: true, Webhook: webhookWithSecretView(sub, secret)}
		},
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

// deleteWebhook serves DELETE /admin/v1/accounts/{accountId}/webhooks/{webhookId}, and answers
// once the read models show it gone.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	pos, err := s.deps.Commands.DeleteWebhookSubscription.Handle(r.Context(),
		commands.DeleteWebhookSubscription{Meta: operatorMeta(r), SubscriptionID: mux.Vars(r)["webhookId"]})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, pos) {
		return
	}
	httpapi.Answer(w, http.StatusOK, admin.Success{Success: true})
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
	httpapi.Answer(w, http.StatusOK, admin.WebhookWithSecretResponse{Success: true, Webhook: webhookWithSecretView(sub, res.Secret)})
}

// enableWebhook serves POST /admin/v1/accounts/{accountId}/webhooks/{webhookId}/enable: the
// integration API's enable (its enableSubscription), for the operator, by the same command. A
// disabled webhook receives the events from now on; what it missed is sent by a replay.
func (s *Server) enableWebhook(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["webhookId"]
	pos, err := s.deps.Commands.EnableWebhookSubscription.Handle(r.Context(),
		commands.EnableWebhookSubscription{Meta: operatorMeta(r), SubscriptionID: id})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, pos) {
		return
	}
	sub, err := s.deps.Webhooks.Subscriptions.Get(r.Context(), accountOf(r).ID, id)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, admin.WebhookResponse{Success: true, Webhook: webhookView(sub)})
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
	httpapi.Answer(w, http.StatusOK, admin.DeliveryResponse{Success: true, Delivery: deliveryView(d)})
}

// replayWebhook serves POST /admin/v1/accounts/{accountId}/webhooks/{webhookId}/replay: the
// integration API's replay of a time window, for the operator, served by the same handler
// (httpapi.ReplayWindow), so both APIs accept and refuse the same windows.
func (s *Server) replayWebhook(w http.ResponseWriter, r *http.Request) {
	httpapi.ReplayWindow(w, r, s.deps.Webhooks.SelfService, accountOf(r).ID, mux.Vars(r)["webhookId"])
}

// webhookRoutes registers the routes of webhook connections and their deliveries (Router, server.go).
func (s *Server) webhookRoutes(admin routes) {
	admin(http.MethodPost, "/accounts/{accountId}/webhooks", s.createWebhook)
	admin(http.MethodGet, "/accounts/{accountId}/webhooks", s.listWebhooks)
	admin(http.MethodDelete, "/accounts/{accountId}/webhooks/{webhookId}", s.deleteWebhook)
	admin(http.MethodPost, "/accounts/{accountId}/webhooks/{webhookId}/rotate-secret", s.rotateWebhookSecret)
	admin(http.MethodPost, "/accounts/{accountId}/webhooks/{webhookId}/enable", s.enableWebhook)
	admin(http.MethodPost, "/accounts/{accountId}/webhooks/{webhookId}/replay", s.replayWebhook)
	admin(http.MethodGet, "/accounts/{accountId}/webhook-deliveries", s.listDeliveries)
	admin(http.MethodPost, "/accounts/{accountId}/webhook-deliveries/{deliveryId}/retry", s.retryDelivery)
}
