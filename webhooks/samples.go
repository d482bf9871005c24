package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/wireformat"
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
	log RecentEvents
}

// NewSamples reads recent events from log.
func NewSamples(log RecentEvents) *Samples { return &Samples{log: log} }

// sourceOf names the domain event each outbound event comes from; checkout events have none yet.
var sourceOf = map[string]string{
	domain.EventFormSubmitted:    domain.FormSubmitted{}.EventType(),
	domain.EventSchedulingBooked: domain.BookingCreated{}.EventType(),
}

// For returns up to three envelopes built from the account's own recent events of that type,
// exactly as they were (or would have been) delivered, or one realistic made-up envelope when
// the account has none.
func (s *Samples) For(ctx context.Context, accountID, eventName string) ([]Envelope, error) {
	eventName = domain.CanonicalEventName(eventName)
	sample, known := madeUp(eventName)
	if !known {
		return nil, ErrUnknownEvent
	}
	if source, ok := sourceOf[eventName]; ok {
		recent, err := s.log.ReadRecentEvents(ctx, accountID, []string{source}, 3)
		if err != nil {
			return nil, err
		}
		var out []Envelope
		for _, r := range recent {
			o, ok, err := toOutbound(r)
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
	return []Envelope{sample}, nil
}

// madeUp returns a realistic envelope of an event type, member for member as section 6 lists.
func madeUp(eventName string) (Envelope, bool) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	env := Envelope{ID: "evt_sample_" + eventName, Type: eventName, CreatedAt: wireformat.Time(now)}
	contact := map[string]any{"contactId": "ct_sample", "email": "ada@example.com", "firstName": "Ada", "lastName": "Lovelace"}
	product := map[string]any{"id": "prod_sample", "name": "Pro Plan", "internalName": "pro-monthly"}
	customer := map[string]any{"email": "ada@example.com", "name": "Ada Lovelace", "contactId": "ct_sample"}
	payment := func(isRebill bool, status string) map[string]any {
		return map[string]any{
			"isRebill": isRebill,
			"product":  product,
			"transaction": map[string]any{"id": "txn_sample", "txnId": "ch_3Psample", "amount": 4900, "currency": "USD",
				"status": status, "processor": "stripe", "subscriptionId": "sub_sample"},
			"pricing":  map[string]any{"tierIndex": 0, "tierName": "Monthly", "pricingTierId": "tier_sample", "bumpIndices": []int{}, "bumps": []any{}},
			"customer": customer,
			"contact":  contact,
		}
	}
	switch eventName {
	case domain.EventFormSubmitted:
		env.Data = formSubmitted{
			FormID: "form_sample", FormName: "Newsletter signup", SubmissionID: "sub_sample", SubmittedAt: wireformat.Time(now),
			SubmissionData: map[string]any{"Email": "ada@example.com", "Name": "Ada Lovelace"},
			Fields: []fieldEntry{
				{ID: "fld_email", Label: "Email", Type: "email", ContactField: ptr(domain.ContactFieldEmail), Value: "ada@example.com"},
				{ID: "fld_name", Label: "Name", Type: "text", ContactField: ptr(domain.ContactFieldFullName), Value: "Ada Lovelace"},
			},
			Contact: formContact{ContactID: "ct_sample", Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace", Phone: "",
				CustomFields: map[string]string{}, CustomFieldsLabeled: []domain.LabeledValue{}},
		}
	case domain.EventSchedulingBooked:
		env.Data = booked{
			EventTypeID: "evt_sample", EventTypeName: "Discovery call", BookingID: "bkg_sample", When: wireformat.Time(now.Add(48 * time.Hour)),
			MeetingURL: "https://meet.example.com/discovery",
			Attendee: attendee{ContactFields: map[string]any{domain.ContactFieldEmail: "ada@example.com", domain.ContactFieldFullName: "Ada Lovelace"},
				Answers: map[string]any{"q_email": "ada@example.com", "q_name": "Ada Lovelace"}},
			Contact: bookedContact{ContactID: "ct_sample", Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace"},
		}
	case domain.EventCheckoutPurchased:
		d := payment(false, "succeeded")
		d["activation"] = map[string]any{"token": "act_sample", "url": "https://app.example.com/signup?token=act_sample", "expiresAt": wireformat.Time(now.Add(7 * 24 * time.Hour))}
		env.Data = d
	case domain.EventCheckoutRebilled:
		env.Data = payment(true, "succeeded")
	case domain.EventCheckoutRefunded:
		d := payment(false, "refunded")
		d["refund"] = map[string]any{"amountCents": 4900, "fullyRefunded": true, "refundedAt": wireformat.Time(now)}
		env.Data = d
	case domain.EventCheckoutCancelScheduled:
		env.Data = map[string]any{"product": product, "customer": customer, "contact": contact,
			"subscription": map[string]any{"id": "sub_sample", "status": "active", "processor": "stripe", "cancelAtPeriodEnd": true,
				"currentPeriodEnd": wireformat.Time(now.Add(20 * 24 * time.Hour)), "scheduledAt": wireformat.Time(now)}}
	case domain.EventCheckoutSubscriptionCancelled:
		env.Data = map[string]any{"product": product, "customer": customer, "contact": contact,
			"subscription": map[string]any{"id": "sub_sample", "status": "cancelled", "processor": "stripe", "cancelledAt": wireformat.Time(now)}}
	default:
		return Envelope{}, false
	}
	return env, true
}
