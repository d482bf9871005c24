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
