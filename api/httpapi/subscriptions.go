package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/funnelhq/funnel/api/wire"
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

// subscriptionRequest is the body of a subscription: the URL under any of the names
// automation tools use, one event or several, and the filters.
type subscriptionRequest struct {
	URL            *string  `json:"url"`
	HookURL        *string  `json:"hookUrl"`
	TargetURL      *string  `json:"targetUrl"`
	Event          *string  `json:"event"`
	Events         []string `json:"events"`
	Secret         *string  `json:"secret"`
	Kind           *string  `json:"kind"`
	FormIDs        []string `json:"formIds"`
	EventTypeIDs   []string `json:"eventTypeIds"`
	ProductIDs     []string `json:"productIds"`
	PricingTierIDs []string `json:"pricingTierIds"`
	BumpIDs        []string `json:"bumpIds"`
}

// spec turns the request into a subscription spec, or an error message.
func (r subscriptionRequest) spec(kind string) (domain.WebhookSubscriptionSpec, string) {
	url := ""
	for _, u := range []*string{r.URL, r.HookURL, r.TargetURL} {
		if u != nil && strings.TrimSpace(*u) != "" {
			url = *u
			break
		}
	}
	if url == "" {
		return domain.WebhookSubscriptionSpec{}, "url is required"
	}
	events := append([]string(nil), r.Events...)
	if r.Event != nil && *r.Event != "" {
		events = append(events, *r.Event)
	}
	spec := domain.WebhookSubscriptionSpec{Kind: kind, URL: url, Events: events, Filters: domain.WebhookFilters{
		FormIDs: r.FormIDs, CalendarIDs: r.EventTypeIDs, ProductIDs: r.ProductIDs, PricingTierIDs: r.PricingTierIDs, BumpIDs: r.BumpIDs,
	}}
	if r.Secret != nil {
		spec.Secret = *r.Secret
	}
	return spec, ""
}

// Create creates the subscription the body describes and answers 201 with its view and its
// secret, which is shown only here.
func (s Subscriptions) Create(w http.ResponseWriter, r *http.Request, how NewWebhookSubscription) {
	var req subscriptionRequest
	if !Decode(w, r, &req) {
		return
	}
	kind := how.Kind
	if how.KindFromBody && req.Kind != nil && *req.Kind != "" {
		switch kind = *req.Kind; kind {
		case domain.WebhookKindCustom, domain.WebhookKindZapier, domain.WebhookKindMake:
		default:
			WriteFieldError(w, "kind", "kind must be custom, zapier or make")
			return
		}
	}
	spec, msg := req.spec(kind)
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
