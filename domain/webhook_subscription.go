package domain

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

const (
	maxWebhookURLLength              = 2048
	minSecretLength, maxSecretLength = 16, 256
	previousSecretValidity           = 24 * time.Hour
	webhookSecretPrefix              = "whsec_"
)

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

// EventNames knows the outbound event types a subscription may name: the webhooks table, not the
// domain, holds them. Canonical replaces legacy aliases by the types they stand for, drops
// repeats, and refuses an unknown name with an Invalid error.
type EventNames interface {
	Canonical(names []string) ([]string, error)
}

// WebhookSubscriptionSpec is what a new subscription asks for.
type WebhookSubscriptionSpec struct {
	Kind string
	URL  string // already checked by the caller's target policy
	// Events are outbound event types, already checked and canonicalised by the caller: which
	// types exist is the webhooks package's knowledge, not the domain's.
	Events []string
	Secret string // empty: one is generated
	// SealedSecret is Secret sealed with the server key (WebhookSecretSealing), which the log
	// keeps instead of the secret; "" only where Secret is "" too.
	SealedSecret string
	Filters      WebhookFilters
}

// WebhookSecretSealing is the associated data a subscription's signing secret is sealed with:
// it opens as that subscription's secret only.
func WebhookSecretSealing(subscriptionID string) []byte {
	return []byte("funnel webhook signing secret\x00" + subscriptionID)
}

// Subscribe creates the subscription.
func (w *WebhookSubscription) Subscribe(accountID string, spec WebhookSubscriptionSpec, known EventNames) error {
	switch spec.Kind {
	case WebhookKindCustom, WebhookKindZapier, WebhookKindMake, WebhookKindRESTHook:
	default:
		return InvalidField("kind", "kind must be custom, zapier or make")
	}
	if spec.URL == "" || len(spec.URL) > maxWebhookURLLength {
		return InvalidField("url", "url is required (at most %d characters)", maxWebhookURLLength)
	}
	if len(spec.Events) == 0 {
		return InvalidField("events", "events: at least one event type is required")
	}
	events, err := known.Canonical(spec.Events)
	if err != nil {
		return err
	}
	spec.Events = events
	filters, err := spec.Filters.normalized()
	if err != nil {
		return err
	}
	// Characters, as the contract counts them (and the OpenAPI's minLength): not bytes.
	if n := utf8.RuneCountInString(spec.Secret); n < minSecretLength || n > maxSecretLength {
		return InvalidField("secret", "secret must be %d to %d characters", minSecretLength, maxSecretLength)
	}
	if spec.SealedSecret == "" {
		return fmt.Errorf("domain: subscription %s: the secret is not sealed", w.id)
	}
	w.record(WebhookSubscribed{SubscriptionID: w.id, AccountID: accountID, Kind: spec.Kind, URL: spec.URL, Events: spec.Events, Filters: filters, SealedSecret: spec.SealedSecret})
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

// Enable lets a disabled subscription receive deliveries again (decisions.md: nothing missed
// meanwhile is sent; a replay does that). Enabling an active one does nothing.
func (w *WebhookSubscription) Enable() error {
	if !w.Exists() {
		return NotFound("webhook subscription not found")
	}
	if w.status == "disabled" {
		w.record(WebhookSubscriptionEnabled{SubscriptionID: w.id})
	}
	return nil
}

// RotateSecret replaces the signing secret by a new one, given sealed (WebhookSecretSealing).
// The previous one keeps signing too, for 24 hours, so that receivers can switch without losing
// a delivery: the webhook read model keeps it, and the event does not repeat it.
func (w *WebhookSubscription) RotateSecret(now time.Time, sealedSecret string) error {
	if !w.Exists() {
		return NotFound("webhook subscription not found")
	}
	w.record(WebhookSecretRotated{SubscriptionID: w.id, SealedSecret: sealedSecret, PreviousValidUntil: now.Add(previousSecretValidity).UTC()})
	return nil
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
		w.exists, w.accountID, w.status, w.kind = true, e.AccountID, "active", e.Kind
	case WebhookSubscriptionDeleted:
		w.status = "deleted"
	case WebhookSubscriptionDisabled:
		w.status = "disabled"
	case WebhookSubscriptionEnabled:
		w.status = "active"
	}
}

// WebhookSubscribed creates a subscription. The log keeps its signing secret, sealed with the
// server key (schema version 2): deliveries are rebuilt from the log, and an HMAC secret cannot
// be stored as a hash.
type WebhookSubscribed struct {
	SubscriptionID string         `json:"subscriptionId"`
	AccountID      string         `json:"accountId"`
	Kind           string         `json:"kind"`
	URL            string         `json:"url"`
	Events         []string       `json:"events"`
	Filters        WebhookFilters `json:"filters"`
	// SealedSecret is the secret sealed with WebhookSecretSealing(SubscriptionID).
	SealedSecret string `json:"sealedSecret,omitempty"`
	// Secret is the secret of a subscription recorded before secrets were sealed (version 1).
	Secret string `json:"secret,omitempty"`
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

// WebhookSubscriptionEnabled lets a disabled subscription receive deliveries again.
type WebhookSubscriptionEnabled struct {
	SubscriptionID string `json:"subscriptionId"`
}

// WebhookSecretRotated replaces a signing secret; the previous one signs too until PreviousValidUntil.
// Since schema version 2 it keeps the new secret sealed (WebhookSecretSealing), and not the
// previous one, which the webhook read model holds.
type WebhookSecretRotated struct {
	SubscriptionID string `json:"subscriptionId"`
	SealedSecret   string `json:"sealedSecret,omitempty"`
	// Secret and PreviousSecret are those of a rotation recorded before secrets were sealed
	// (version 1), in the clear.
	Secret             string    `json:"secret,omitempty"`
	PreviousSecret     string    `json:"previousSecret,omitempty"`
	PreviousValidUntil time.Time `json:"previousValidUntil"`
}

func (WebhookSubscribed) EventType() string           { return "WebhookSubscribed" }
func (WebhookSubscriptionDeleted) EventType() string  { return "WebhookSubscriptionDeleted" }
func (WebhookSubscriptionDisabled) EventType() string { return "WebhookSubscriptionDisabled" }
func (WebhookSecretRotated) EventType() string        { return "WebhookSecretRotated" }
func (WebhookSubscriptionEnabled) EventType() string  { return "WebhookSubscriptionEnabled" }

// A webhook subscription's history is its stream (domain.SubscriptionEvent).
func (e WebhookSubscribed) SubscriptionRef() string           { return e.SubscriptionID }
func (e WebhookSubscriptionDeleted) SubscriptionRef() string  { return e.SubscriptionID }
func (e WebhookSubscriptionDisabled) SubscriptionRef() string { return e.SubscriptionID }
func (e WebhookSecretRotated) SubscriptionRef() string        { return e.SubscriptionID }
func (e WebhookSubscriptionEnabled) SubscriptionRef() string  { return e.SubscriptionID }

// Redacted is the event with its secret hidden (SecretEvent).
func (e WebhookSubscribed) Redacted() Event {
	e.Secret, e.SealedSecret = RedactedSecret, ""
	return e
}

// Redacted is the event with both secrets hidden (SecretEvent).
func (e WebhookSecretRotated) Redacted() Event {
	e.Secret, e.PreviousSecret, e.SealedSecret = RedactedSecret, RedactedSecret, ""
	return e
}

// sameShape upcasts version 1 of the subscription events as it is: its secrets, in the clear,
// decode into Secret and PreviousSecret, which version 2 leaves empty.
var sameShape = map[int]Upcaster{1: func(old json.RawMessage) (json.RawMessage, error) { return old, nil }}

func init() {
	register(WebhookSubscribed{}, 2, sameShape) // version 1 kept the secret in the clear, in Secret
	register(WebhookSubscriptionDeleted{}, 1, nil)
	register(WebhookSubscriptionDisabled{}, 1, nil)
	register(WebhookSubscriptionEnabled{}, 1, nil)
	register(WebhookSecretRotated{}, 2, sameShape) // version 1 kept both secrets in the clear
}

// webhookSubscriptionStateFormat numbers the layout of webhookSubscriptionState: change it with
// the struct.
const webhookSubscriptionStateFormat = 1

// webhookSubscriptionState is a WebhookSubscription's state as Restorable encodes it. It holds
// the signing secret, as the log does; it is kept in memory only.
type webhookSubscriptionState struct {
	Exists    bool   `json:"exists"`
	AccountID string `json:"accountId"`
	Status    string `json:"status"`
	Secret    string `json:"secret"`
	Kind      string `json:"kind"`
}

// EncodeState returns the subscription's state (Restorable).
func (w *WebhookSubscription) EncodeState() ([]byte, error) {
	return encodeState(webhookSubscriptionStateFormat, webhookSubscriptionState{
		Exists: w.exists, AccountID: w.accountID, Status: w.status, Secret: w.secret, Kind: w.kind,
	})
}

// RestoreState sets the state of an empty subscription (Restorable).
func (w *WebhookSubscription) RestoreState(data []byte) error {
	s, err := decodeState[webhookSubscriptionState](data, webhookSubscriptionStateFormat)
	if err != nil {
		return err
	}
	w.exists, w.accountID, w.status, w.secret, w.kind = s.Exists, s.AccountID, s.Status, s.Secret, s.Kind
	return nil
}
