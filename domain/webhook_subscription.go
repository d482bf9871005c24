package domain

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"
)

// Outbound event types (integration-api.md section 6).
const (
	EventFormSubmitted                 = "form.submitted"
	EventSchedulingBooked              = "scheduling.booked"
	EventCheckoutPurchased             = "checkout.purchased"
	EventCheckoutRebilled              = "checkout.rebilled"
	EventCheckoutRefunded              = "checkout.refunded"
	EventCheckoutCancelScheduled       = "checkout.subscription_cancel_scheduled"
	EventCheckoutSubscriptionCancelled = "checkout.subscription_cancelled"
	legacyCheckoutPaid                 = "checkout.paid"
	filterNone                         = "__none__"
	maxFilterIDs                       = 100
	maxWebhookURLLength                = 2048
	minSecretLength, maxSecretLength   = 16, 256
	previousSecretValidity             = 24 * time.Hour
	maxEventsPerSubscription           = 7
	webhookSecretPrefix                = "whsec_"
)

// OutboundEventTypes lists every outbound event type, in the contract's order.
var OutboundEventTypes = []string{
	EventFormSubmitted, EventSchedulingBooked, EventCheckoutPurchased, EventCheckoutRebilled,
	EventCheckoutRefunded, EventCheckoutCancelScheduled, EventCheckoutSubscriptionCancelled,
}

// Webhook subscription kinds: connections made in the app (custom, and the automation tools'
// own pages) and REST Hook subscriptions made through the API.
const (
	WebhookKindCustom   = "custom"
	WebhookKindZapier   = "zapier"
	WebhookKindMake     = "make"
	WebhookKindRESTHook = "rest_hook"
)

// WebhookKinds lists every kind, as the operator API filters by them.
var WebhookKinds = []string{WebhookKindCustom, WebhookKindZapier, WebhookKindMake, WebhookKindRESTHook}

// CanonicalEventName maps the legacy alias checkout.paid to checkout.purchased, the type it
// stands for (integration-api.md section 6: it is never emitted as a type).
func CanonicalEventName(name string) string {
	if name == legacyCheckoutPaid {
		return EventCheckoutPurchased
	}
	return name
}

// WebhookFilters narrow a subscription to some resources (integration-api.md section 6).
type WebhookFilters struct {
	FormIDs        []string `json:"formIds"`
	EventTypeIDs   []string `json:"eventTypeIds"`
	ProductIDs     []string `json:"productIds"`
	PricingTierIDs []string `json:"pricingTierIds"`
	BumpIDs        []string `json:"bumpIds"`
}

// normalized returns the filters with empty lists rather than nil ones, and checks their size
// and values: "__none__" is meaningful only for pricingTierIds and bumpIds.
func (f WebhookFilters) normalized() (WebhookFilters, error) {
	lists := []struct {
		name      string
		ids       *[]string
		allowNone bool
	}{{"formIds", &f.FormIDs, false}, {"eventTypeIds", &f.EventTypeIDs, false}, {"productIds", &f.ProductIDs, false},
		{"pricingTierIds", &f.PricingTierIDs, true}, {"bumpIds", &f.BumpIDs, true}}
	for _, l := range lists {
		if len(*l.ids) > maxFilterIDs {
			return f, Invalid("%s: at most %d ids", l.name, maxFilterIDs)
		}
		seen := map[string]bool{}
		out := []string{}
		for _, id := range *l.ids {
			id = strings.TrimSpace(id)
			if id == "" || len(id) > MaxNameLength {
				return f, Invalid("%s: ids must be non-empty strings of at most %d characters", l.name, MaxNameLength)
			}
			if id == filterNone && !l.allowNone {
				return f, Invalid("%s: __none__ is only meaningful for pricingTierIds and bumpIds", l.name)
			}
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
		if seen[filterNone] && len(out) > 1 {
			return f, Invalid("%s: __none__ cannot be combined with ids", l.name)
		}
		*l.ids = out
	}
	return f, nil
}

// ParseOutboundEvents validates subscribed event types, accepting the legacy alias
// checkout.paid for checkout.purchased.
func ParseOutboundEvents(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, Invalid("events: at least one event type is required")
	}
	known := map[string]bool{}
	for _, t := range OutboundEventTypes {
		known[t] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		n = CanonicalEventName(n)
		if !known[n] {
			return nil, Invalid("events: unknown event type %q", n)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, nil
}

// NewWebhookSecret returns a signing secret in the Standard Webhooks form ("whsec_" and 32 random
// bytes in base64).
func NewWebhookSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return webhookSecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// WebhookSubscription is a target URL that receives some outbound events of an account.
type WebhookSubscription struct {
	id        string
	exists    bool
	accountID string
	status    string // active, disabled, deleted
	secret    string
	kind      string
	changes
}

// WebhookSubscriptionStream returns an empty subscription to load stream id into.
func WebhookSubscriptionStream(id string) *WebhookSubscription {
	return &WebhookSubscription{id: id}
}

// StreamID is the subscription id.
func (w *WebhookSubscription) StreamID() string { return w.id }

// Exists tells whether the subscription was created and not deleted.
func (w *WebhookSubscription) Exists() bool { return w.exists && w.status != "deleted" }

// AccountID is the account the subscription belongs to.
func (w *WebhookSubscription) AccountID() string { return w.accountID }

// SubscriptionSpec is what a new subscription asks for.
type SubscriptionSpec struct {
	Kind    string
	URL     string // already checked by the caller's target policy
	Events  []string
	Secret  string // empty: one is generated
	Filters WebhookFilters
}

// Subscribe creates the subscription.
func (w *WebhookSubscription) Subscribe(accountID string, spec SubscriptionSpec) error {
	switch spec.Kind {
	case WebhookKindCustom, WebhookKindZapier, WebhookKindMake, WebhookKindRESTHook:
	default:
		return Invalid("kind must be custom, zapier or make")
	}
	if spec.URL == "" || len(spec.URL) > maxWebhookURLLength {
		return Invalid("url is required (at most %d characters)", maxWebhookURLLength)
	}
	events, err := ParseOutboundEvents(spec.Events)
	if err != nil {
		return err
	}
	filters, err := spec.Filters.normalized()
	if err != nil {
		return err
	}
	secret := spec.Secret
	if secret == "" {
		secret = NewWebhookSecret()
	} else if len(secret) < minSecretLength || len(secret) > maxSecretLength {
		return Invalid("secret must be %d to %d characters", minSecretLength, maxSecretLength)
	}
	w.record(WebhookSubscribed{SubscriptionID: w.id, AccountID: accountID, Kind: spec.Kind, URL: spec.URL, Events: events, Filters: filters, Secret: secret})
	return nil
}

// Delete ends the subscription. Deleting one that is gone is NotFound (decisions.md).
func (w *WebhookSubscription) Delete() error {
	if !w.Exists() {
		return NotFound("webhook subscription not found")
	}
	w.record(WebhookSubscriptionDeleted{SubscriptionID: w.id})
	return nil
}

// DeleteRESTHook ends a subscription through the REST Hook API, which manages REST Hook
// subscriptions only: to it, a connection configured in the app does not exist.
func (w *WebhookSubscription) DeleteRESTHook() error {
	if w.Exists() && w.kind != WebhookKindRESTHook {
		return NotFound("no REST Hook subscription with that id (webhooks configured in the app are deleted there)")
	}
	return w.Delete()
}

// Disable stops deliveries to a target that answered 410 Gone (the REST Hooks convention).
// It does nothing to a subscription that is not active.
func (w *WebhookSubscription) Disable(reason string) {
	if w.Exists() && w.status == "active" {
		w.record(WebhookSubscriptionDisabled{SubscriptionID: w.id, Reason: reason})
	}
}

// RotateSecret replaces the signing secret. The previous one keeps signing too, for 24 hours,
// so that receivers can switch without losing a delivery.
func (w *WebhookSubscription) RotateSecret(now time.Time) (string, error) {
	if !w.Exists() {
		return "", NotFound("webhook subscription not found")
	}
	secret := NewWebhookSecret()
	w.record(WebhookSecretRotated{SubscriptionID: w.id, Secret: secret, PreviousSecret: w.secret, PreviousValidUntil: now.Add(previousSecretValidity).UTC()})
	return secret, nil
}

// Replay applies one event of the subscription's stream.
func (w *WebhookSubscription) Replay(e Event) { w.when(e) }

func (w *WebhookSubscription) record(e Event) {
	w.when(e)
	w.pending = append(w.pending, e)
}

func (w *WebhookSubscription) when(e Event) {
	switch e := e.(type) {
	case WebhookSubscribed:
		w.exists, w.accountID, w.status, w.secret, w.kind = true, e.AccountID, "active", e.Secret, e.Kind
	case WebhookSubscriptionDeleted:
		w.status = "deleted"
	case WebhookSubscriptionDisabled:
		w.status = "disabled"
	case WebhookSecretRotated:
		w.secret = e.Secret
	}
}

// WebhookSubscribed creates a subscription. The log keeps its signing secret: deliveries are
// rebuilt from the log, and an HMAC secret cannot be stored as a hash.
type WebhookSubscribed struct {
	SubscriptionID string         `json:"subscriptionId"`
	AccountID      string         `json:"accountId"`
	Kind           string         `json:"kind"`
	URL            string         `json:"url"`
	Events         []string       `json:"events"`
	Filters        WebhookFilters `json:"filters"`
	Secret         string         `json:"secret"`
}

// WebhookSubscriptionDeleted ends a subscription.
type WebhookSubscriptionDeleted struct {
	SubscriptionID string `json:"subscriptionId"`
}

// WebhookSubscriptionDisabled stops deliveries to a target that is gone.
type WebhookSubscriptionDisabled struct {
	SubscriptionID string `json:"subscriptionId"`
	Reason         string `json:"reason"`
}

// WebhookSecretRotated replaces a signing secret; the previous one signs too until PreviousValidUntil.
type WebhookSecretRotated struct {
	SubscriptionID     string    `json:"subscriptionId"`
	Secret             string    `json:"secret"`
	PreviousSecret     string    `json:"previousSecret"`
	PreviousValidUntil time.Time `json:"previousValidUntil"`
}

func (WebhookSubscribed) EventType() string           { return "WebhookSubscribed" }
func (WebhookSubscriptionDeleted) EventType() string  { return "WebhookSubscriptionDeleted" }
func (WebhookSubscriptionDisabled) EventType() string { return "WebhookSubscriptionDisabled" }
func (WebhookSecretRotated) EventType() string        { return "WebhookSecretRotated" }

// Redacted is the event with its secret hidden (SecretEvent).
func (e WebhookSubscribed) Redacted() Event {
	e.Secret = RedactedSecret
	return e
}

// Redacted is the event with both secrets hidden (SecretEvent).
func (e WebhookSecretRotated) Redacted() Event {
	e.Secret, e.PreviousSecret = RedactedSecret, RedactedSecret
	return e
}

func init() {
	register(WebhookSubscribed{}, 1, nil)
	register(WebhookSubscriptionDeleted{}, 1, nil)
	register(WebhookSubscriptionDisabled{}, 1, nil)
	register(WebhookSecretRotated{}, 1, nil)
}
