package webhooks

import (
	"context"
	"encoding/json"
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

// For returns up to three envelopes built from the account's own recent events of that type,
// as they were (or would have been) delivered but with their secrets redacted (a sample is shown
// to whoever may set up a trigger: it must not hand out a live activation token), or one
// realistic made-up envelope when the account has none. Real events are used only when canRead
// says the caller holds the read scope of their data (the table's readScope: a sample built from
// the account's real events shows a real person's email and name, which a key that may only set
// up webhooks must not read unless it may read them through the API anyway); else the made-up
// envelope.
func (s *Samples) For(ctx context.Context, accountID, eventName string, canRead func(domain.Scope) bool) ([]Envelope, error) {
	event, ok := s.events.lookup(eventName)
	if !ok {
		return nil, ErrUnknownEvent
	}
	if types := event.sourceTypes(); len(types) > 0 && canRead(event.readScope) {
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
// same generated types as real deliveries (events.go pairs each with its event's mappers).

func formSubmittedSample(now time.Time) wire.FormSubmittedData {
	email, name := sampleAnswer[wire.SubmittedValue]("ada@example.com"), sampleAnswer[wire.SubmittedValue]("Ada Lovelace")
	emailValue, nameValue := sampleAnswer[wire.SubmittedField_Value]("ada@example.com"), sampleAnswer[wire.SubmittedField_Value]("Ada Lovelace")
	return wire.FormSubmittedData{
		FormId: "form_sample", FormName: "Newsletter signup", SubmissionId: "fsub_sample", SubmittedAt: wire.At(now),
		SubmissionData: map[string]wire.SubmittedValue{"Email": email, "Name": name},
		Fields: []wire.SubmittedField{
			{Id: "fld_email", Label: "Email", Type: "email", ContactField: optional(domain.ContactFieldEmail), Value: &emailValue},
			{Id: "fld_name", Label: "Name", Type: "text", ContactField: optional(domain.ContactFieldFullName), Value: &nameValue},
		},
		Contact: wire.FormContact{ContactId: "ct_sample", Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace", Phone: "",
			CustomFields: map[string]string{}, CustomFieldsLabeled: []wire.LabeledValue{}},
	}
}

func bookedSample(now time.Time) wire.SchedulingBookedData {
	email, name := sampleAnswer[wire.SubmittedValue]("ada@example.com"), sampleAnswer[wire.SubmittedValue]("Ada Lovelace")
	return wire.SchedulingBookedData{
		EventTypeId: "evt_sample", EventTypeName: "Discovery call", BookingId: "bkg_sample", When: wire.At(now.Add(48 * time.Hour)),
		MeetingUrl: optional("https://meet.example.com/discovery"),
		Attendee: wire.Attendee{ContactFields: map[string]wire.SubmittedValue{domain.ContactFieldEmail: email, domain.ContactFieldFullName: name},
			Answers: map[string]wire.SubmittedValue{"q_email": email, "q_name": name}},
		Contact: sampleContact,
	}
}

// sampleAnswer is a made-up answer as the union type U; a string always encodes.
func sampleAnswer[U any, P interface {
	*U
	json.Unmarshaler
}](s string) U {
	u, _ := answerOf[U, P](s)
	return u
}

func purchasedSample(now time.Time) wire.CheckoutPaymentData {
	p := samplePayment(false, "succeeded")
	p.Activation = &wire.CheckoutActivation{Token: sampleToken, Url: "https://app.example.com/signup?token=" + sampleToken, ExpiresAt: wire.At(now.Add(7 * 24 * time.Hour))}
	return p
}

func rebilledSample(time.Time) wire.CheckoutPaymentData { return samplePayment(true, "succeeded") }

func refundedSample(now time.Time) wire.CheckoutRefundedData {
	p := samplePayment(false, "refunded")
	return wire.CheckoutRefundedData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Refund: wire.CheckoutRefund{AmountCents: 4900, FullyRefunded: true, RefundedAt: wire.At(now)},
	}
}

func cancelScheduledSample(now time.Time) wire.CheckoutSubscriptionCancelScheduledData {
	p := samplePayment(false, "succeeded")
	return wire.CheckoutSubscriptionCancelScheduledData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Subscription: wire.ScheduledCancellation{
			Id: "sub_sample", Status: "active", Processor: "stripe", CancelAtPeriodEnd: true,
			CurrentPeriodEnd: wire.At(now.Add(20 * 24 * time.Hour)), ScheduledAt: wire.At(now),
		},
	}
}

func subscriptionCancelledSample(now time.Time) wire.CheckoutSubscriptionCancelledData {
	p := samplePayment(false, "succeeded")
	return wire.CheckoutSubscriptionCancelledData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Subscription: wire.EndedSubscription{Id: "sub_sample", Status: "cancelled", Processor: "stripe", CancelledAt: wire.At(now)},
	}
}

var sampleContact = wire.ContactSummary{ContactId: "ct_sample", Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace"}

// sampleToken looks like an activation token (43 base64url characters) and is none.
const sampleToken = "c2FtcGxlLWFjdGl2YXRpb24tdG9rZW4tbm90LXJlYWw"

// samplePayment is a monthly plan paid with Stripe, without bumps.
func samplePayment(isRebill bool, status string) wire.CheckoutPaymentData {
	return wire.CheckoutPaymentData{
		IsRebill: isRebill,
		Product:  wire.CheckoutProduct{Id: "prod_sample", Name: "Pro Plan", InternalName: "pro-monthly"},
		Transaction: wire.CheckoutTransaction{Id: "txn_sample", TxnId: "ch_3Psample", Amount: 4900, Currency: "USD",
			Status: wire.TransactionStatus(status), Processor: "stripe", SubscriptionId: "sub_sample"},
		Pricing:  wire.CheckoutPricing{TierIndex: 0, TierName: "Monthly", PricingTierId: "tier_sample", BumpIndices: []int{}, Bumps: []wire.Bump{}},
		Customer: wire.CheckoutCustomer{Email: "ada@example.com", Name: "Ada Lovelace", ContactId: "ct_sample"},
		Contact:  sampleContact,
	}
}
