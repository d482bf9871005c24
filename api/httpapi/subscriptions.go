package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/webhooks"
)

// SubscriptionReader reads one webhook subscription of an account (the webhook projector's
// table): webhooks.Subscriptions.
type SubscriptionReader interface {
	Get(ctx context.Context, accountID, id string) (webhooks.Subscription, error)
}

// Subscriptions creates and deletes webhook subscriptions for both APIs: a REST Hook of the
// integration API and a webhook of the operator API are one thing, with one body.
type Subscriptions struct {
	Commands   commands.Handlers
	Read       SubscriptionReader
	ReadModels ReadModelWaiter
}

// NewWebhookSubscription says how an API creates a subscription and shows it.
type NewWebhookSubscription struct {
	Meta commands.Meta
	// Kind is the kind of connection created; with KindFromBody, the body's "kind" may choose
	// custom, zapier or make instead (the operator API).
	Kind         string
	KindFromBody bool
	// Created is the answer (a generated wire type of the API), made from the subscription and
	// its secret.
	Created func(sub webhooks.Subscription, secret string) any
}

// subscriptionSpec turns the body of a subscription into a subscription spec, or an error
// message: the URL under any of the names automation tools use, one event or several, and the
// filters. Both APIs' bodies are read as the operator's CreateWebhookRequest, which is the
// integration API's CreateWebhookSubscriptionRequest and kind (a test keeps them so): one body
// and one mapping, and a kind that is no string is refused on both APIs, as it always was,
// though only the operator API reads it.
func subscriptionSpec(r admin.CreateWebhookRequest, kind string) (domain.WebhookSubscriptionSpec, string) {
	url := ""
	for _, u := range []*string{r.Url, r.HookUrl, r.TargetUrl} {
		if u != nil && strings.TrimSpace(*u) != "" {
			url = *u
			break
		}
	}
	if url == "" {
		return domain.WebhookSubscriptionSpec{}, "url is required"
	}
	var events []string
	for _, e := range wire.Value(r.Events) {
		events = append(events, string(e))
	}
	if r.Event != nil && *r.Event != "" {
		events = append(events, string(*r.Event))
	}
	spec := domain.WebhookSubscriptionSpec{Kind: kind, URL: url, Events: events, Secret: wire.Value(r.Secret), Filters: domain.WebhookFilters{
		FormIDs: wire.Value(r.FormIds), CalendarIDs: wire.Value(r.EventTypeIds), ProductIDs: wire.Value(r.ProductIds),
		PricingTierIDs: wire.Value(r.PricingTierIds), BumpIDs: wire.Value(r.BumpIds),
	}}
	return spec, ""
}

// Create creates the subscription the body describes and answers 201 with its view and its
// secret, which is shown only here.
func (s Subscriptions) Create(w http.ResponseWriter, r *http.Request, how NewWebhookSubscription) {
	var req admin.CreateWebhookRequest
	if !Decode(w, r, &req) {
		return
	}
	kind := how.Kind
	if how.KindFromBody && req.Kind != nil && *req.Kind != "" {
		switch kind = string(*req.Kind); kind {
		case domain.WebhookKindCustom, domain.WebhookKindZapier, domain.WebhookKindMake:
		default:
			WriteFieldError(w, "kind", "kind must be custom, zapier or make")
			return
		}
	}
	spec, msg := subscriptionSpec(req, kind)
	if msg != "" {
		WriteFieldError(w, "url", msg)
		return
	}
	res, err := s.Commands.CreateWebhookSubscription.Handle(r.Context(), commands.CreateWebhookSubscription{Meta: how.Meta, Spec: spec})
	if err != nil {
		Fail(w, r, err)
		return
	}
	if !AwaitReadModels(w, r, s.ReadModels, res.Position) {
		return
	}
	sub, err := s.Read.Get(r.Context(), how.Meta.AccountID, res.SubscriptionID)
	if err != nil {
		Fail(w, r, err)
		return
	}
	Answer(w, http.StatusCreated, how.Created(sub, res.Secret))
}

// Delete deletes a subscription and answers 200 once the read models show it gone.
func (s Subscriptions) Delete(w http.ResponseWriter, r *http.Request, cmd commands.DeleteWebhookSubscription) {
	pos, err := s.Commands.DeleteWebhookSubscription.Handle(r.Context(), cmd)
	if err != nil {
		Fail(w, r, err)
		return
	}
	if !AwaitReadModels(w, r, s.ReadModels, pos) {
		return
	}
	Answer(w, http.StatusOK, wire.Success{Success: true})
}
