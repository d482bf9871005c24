package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// ErrUnknownEvent is returned for an event name that is not an outbound event type.
var ErrUnknownEvent = errors.New("webhooks: unknown event type")

// ErrNotFound is returned for a subscription or a delivery that does not exist.
var ErrNotFound = errors.New("webhooks: not found")

// RecentEvents reads an account's latest events of some types.
type RecentEvents interface {
	ReadRecentEvents(ctx context.Context, accountID string, types []string, limit int) ([]domain.Recorded, error)
}

// Samples builds the sample payloads of GET /api/v1/webhooks/events/:eventName, which automation
// tools show while an integrator sets up a trigger.
type Samples struct {
	log    RecentEvents
	events *Catalogue
}

// NewSamples reads recent events from log.
func NewSamples(log RecentEvents) *Samples { return &Samples{log: log, events: Events} }

// samplesPerEvent is how many of an account's recent events the samples show at most.
const samplesPerEvent = 3

// readScopes are the scopes that read the data each outbound event carries: a sample built from
// the account's real events shows a real person's email and name, which a key that may only set
// up webhooks (webhooks:write) must not read unless it may read them through the API anyway. An
// event missing here gets made-up samples only.
var readScopes = map[string]domain.Scope{
	"form.submitted":                         domain.ScopeFormsRead,
	"scheduling.booked":                      domain.ScopeSchedulingRead,
	"checkout.purchased":                     domain.ScopeCheckoutRead,
	"checkout.rebilled":                      domain.ScopeCheckoutRead,
	"checkout.refunded":                      domain.ScopeCheckoutRead,
	"checkout.subscription_cancel_scheduled": domain.ScopeCheckoutRead,
	"checkout.subscription_cancelled":        domain.ScopeCheckoutRead,
}

// For returns up to three envelopes built from the account's own recent events of that type,
// as they were (or would have been) delivered but with their secrets redacted (a sample is shown
// to whoever may set up a trigger: it must not hand out a live activation token), or one
// realistic made-up envelope when the account has none. Real events are used only when canRead
// says the caller holds the read scope of their data (readScopes); else the made-up envelope.
func (s *Samples) For(ctx context.Context, accountID, eventName string, canRead func(domain.Scope) bool) ([]Envelope, error) {
	event, ok := s.events.lookup(eventName)
	if !ok {
		return nil, ErrUnknownEvent
	}
	scope, known := readScopes[event.name]
	if types := event.sourceTypes(); len(types) > 0 && known && canRead(scope) {
		recent, err := s.log.ReadRecentEvents(ctx, accountID, types, samplesPerEvent)
		if err != nil {
			return nil, fmt.Errorf("webhooks: recent events for %s samples: %w", event.name, err)
		}
		var out []Envelope
		for _, r := range recent {
			e, err := r.Decode()
			if err != nil {
				return nil, fmt.Errorf("webhooks: decode %s sample: %w", r.Type, err)
			}
			if secret, ok := e.(domain.SecretEvent); ok {
				e = secret.Redacted()
			}
			o, ok, err := s.events.outboundOf(r, e, redacting{})
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, o.envelope)
			}
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	return []Envelope{{ID: sampleID(event.name), Type: event.name, CreatedAt: wire.Time(now), Data: event.sample(now)}}, nil
}

// sampleNamespace derives the ids of sample envelopes.
var sampleNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/funnelhq/funnel/webhooks/samples"))

// sampleID is the id of an event type's made-up envelope: UUID-shaped like a real envelope's id
// (a domain event's UUIDv7), stable for the type, and never a real one (it is a version 5 UUID).
func sampleID(eventName string) string {
	return uuid.NewSHA1(sampleNamespace, []byte(eventName)).String()
}

// The sample builders below make realistic payloads, member for member as section 6 lists, of the
// same types as real deliveries (events.go pairs each with its event's mappers).

func formSubmittedSample(now time.Time) formSubmitted {
	return formSubmitted{
		FormID: "form_sample", FormName: "Newsletter signup", SubmissionID: "fsub_sample", SubmittedAt: wire.Time(now),
		SubmissionData: map[string]any{"Email": "ada@example.com", "Name": "Ada Lovelace"},
		Fields: []fieldEntry{
			{ID: "fld_email", Label: "Email", Type: "email", ContactField: optional(domain.ContactFieldEmail), Value: "ada@example.com"},
			{ID: "fld_name", Label: "Name", Type: "text", ContactField: optional(domain.ContactFieldFullName), Value: "Ada Lovelace"},
		},
		Contact: formContact{ContactID: "ct_sample", Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace", Phone: "",
			CustomFields: map[string]string{}, CustomFieldsLabeled: []domain.LabeledValue{}},
	}
}

func bookedSample(now time.Time) booked {
	return booked{
		EventTypeID: "evt_sample", EventTypeName: "Discovery call", BookingID: "bkg_sample", When: wire.Time(now.Add(48 * time.Hour)),
		MeetingURL: optional("https://meet.example.com/discovery"),
		Attendee: attendee{ContactFields: map[string]any{domain.ContactFieldEmail: "ada@example.com", domain.ContactFieldFullName: "Ada Lovelace"},
			Answers: map[string]any{"q_email": "ada@example.com", "q_name": "Ada Lovelace"}},
		Contact: sampleContact,
	}
}

func purchasedSample(now time.Time) checkoutPayment {
	p := samplePayment(false, "succeeded")
	p.Activation = &checkoutActivation{Token: sampleToken, URL: "https://app.example.com/signup?token=" + sampleToken, ExpiresAt: wire.Time(now.Add(7 * 24 * time.Hour))}
	return p
}

func rebilledSample(time.Time) checkoutPayment { return samplePayment(true, "succeeded") }

func refundedSample(now time.Time) checkoutRefunded {
	return checkoutRefunded{
		checkoutPayment: samplePayment(false, "refunded"),
		Refund:          checkoutRefund{AmountCents: 4900, FullyRefunded: true, RefundedAt: wire.Time(now)},
	}
}

func cancelScheduledSample(now time.Time) checkoutCancelScheduled {
	return checkoutCancelScheduled{checkoutPayment: samplePayment(false, "succeeded"), Subscription: scheduledCancellation{
		ID: "sub_sample", Status: "active", Processor: "stripe", CancelAtPeriodEnd: true,
		CurrentPeriodEnd: wire.Time(now.Add(20 * 24 * time.Hour)), ScheduledAt: wire.Time(now),
	}}
}

func subscriptionCancelledSample(now time.Time) checkoutSubscriptionCancelled {
	return checkoutSubscriptionCancelled{checkoutPayment: samplePayment(false, "succeeded"), Subscription: endedSubscription{
		ID: "sub_sample", Status: "cancelled", Processor: "stripe", CancelledAt: wire.Time(now),
	}}
}

var sampleContact = contactSummary{ContactID: "ct_sample", Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace"}

// sampleToken looks like an activation token (43 base64url characters) and is none.
const sampleToken = "c2FtcGxlLWFjdGl2YXRpb24tdG9rZW4tbm90LXJlYWw"

// samplePayment is a monthly plan paid with Stripe, without bumps.
func samplePayment(isRebill bool, status string) checkoutPayment {
	return checkoutPayment{
		IsRebill: isRebill,
		Product:  checkoutProduct{ID: "prod_sample", Name: "Pro Plan", InternalName: "pro-monthly"},
		Transaction: checkoutTransaction{ID: "txn_sample", TxnID: "ch_3Psample", Amount: 4900, Currency: "USD",
			Status: status, Processor: "stripe", SubscriptionID: "sub_sample"},
		Pricing:  checkoutPricing{TierIndex: 0, TierName: "Monthly", PricingTierID: "tier_sample", BumpIndices: []int{}, Bumps: []domain.Bump{}},
		Customer: checkoutCustomer{Email: "ada@example.com", Name: "Ada Lovelace", ContactID: "ct_sample"},
		Contact:  sampleContact,
	}
}
