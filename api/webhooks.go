package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/webhooks"
	"github.com/funnelhq/funnel/wireformat"
)

// subscriptionRequest is the body of a REST Hook subscription (and of an operator webhook):
// the URL under any of the names automation tools use, one event or several, and the filters.
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
func (r subscriptionRequest) spec(kind string) (domain.SubscriptionSpec, string) {
	url := ""
	for _, u := range []*string{r.URL, r.HookURL, r.TargetURL} {
		if u != nil && strings.TrimSpace(*u) != "" {
			url = *u
			break
		}
	}
	if url == "" {
		return domain.SubscriptionSpec{}, "url is required"
	}
	events := append([]string(nil), r.Events...)
	if r.Event != nil && *r.Event != "" {
		events = append(events, *r.Event)
	}
	spec := domain.SubscriptionSpec{Kind: kind, URL: url, Events: events, Filters: domain.WebhookFilters{
		FormIDs: r.FormIDs, EventTypeIDs: r.EventTypeIDs, ProductIDs: r.ProductIDs, PricingTierIDs: r.PricingTierIDs, BumpIDs: r.BumpIDs,
	}}
	if r.Secret != nil {
		spec.Secret = *r.Secret
	}
	return spec, ""
}

func filtersView(f domain.WebhookFilters) object {
	return object{"formIds": wireformat.List(f.FormIDs), "eventTypeIds": wireformat.List(f.EventTypeIDs), "productIds": wireformat.List(f.ProductIDs),
		"pricingTierIds": wireformat.List(f.PricingTierIDs), "bumpIds": wireformat.List(f.BumpIDs)}
}

// subscriptionView is a subscription as the REST Hook API shows it.
func subscriptionView(s webhooks.Subscription) object {
	return object{"id": s.ID, "url": s.URL, "events": wireformat.List(s.Events), "filters": filtersView(s.Filters), "createdAt": wireformat.Time(s.CreatedAt)}
}

// createSubscription creates a subscription and answers 201 with the view (and the secret,
// shown only here). The operator API lets the body choose the kind of connection.
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request, meta commands.Meta, kind string, kindFromBody bool, member string, view func(webhooks.Subscription) object) {
	var req subscriptionRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if kindFromBody && req.Kind != nil && *req.Kind != "" {
		switch kind = *req.Kind; kind {
		case domain.WebhookKindCustom, domain.WebhookKindZapier, domain.WebhookKindMake:
		default:
			writeError(w, http.StatusBadRequest, "kind must be custom, zapier or make")
			return
		}
	}
	spec, msg := req.spec(kind)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	res, err := s.deps.Commands.CreateWebhookSubscription.Handle(r.Context(), commands.CreateWebhookSubscription{Meta: meta, Spec: spec})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	sub, err := s.deps.Subscriptions.Get(r.Context(), res.SubscriptionID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := view(sub)
	v["secret"] = res.Secret
	writeJSON(w, http.StatusCreated, object{member: v})
}

// subscribeRESTHook serves POST /api/v1/webhooks/subscriptions.
func (s *Server) subscribeRESTHook(w http.ResponseWriter, r *http.Request) {
	s.createSubscription(w, r, principalOf(r.Context()).meta(r), domain.WebhookKindRESTHook, false, "subscription", subscriptionView)
}

// unsubscribeRESTHook serves DELETE /api/v1/webhooks/subscriptions/{id}.
func (s *Server) unsubscribeRESTHook(w http.ResponseWriter, r *http.Request) {
	s.deleteSubscription(w, r, commands.DeleteWebhookSubscription{Meta: principalOf(r.Context()).meta(r), SubscriptionID: mux.Vars(r)["id"], RESTHookOnly: true})
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request, cmd commands.DeleteWebhookSubscription) {
	pos, err := s.deps.Commands.DeleteWebhookSubscription.Handle(r.Context(), cmd)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, pos) {
		return
	}
	writeJSON(w, http.StatusOK, nil)
}

// sampleEvents serves GET /api/v1/webhooks/events/{eventName}.
func (s *Server) sampleEvents(w http.ResponseWriter, r *http.Request) {
	events, err := s.deps.Samples.For(r.Context(), principalOf(r.Context()).key.AccountID, mux.Vars(r)["eventName"])
	if errors.Is(err, webhooks.ErrUnknownEvent) {
		writeError(w, http.StatusNotFound, "unknown event type")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, object{"events": events})
}
