// Package domain holds the business rules of funnel: its aggregates, the events they record,
// and the decisions they make. It imports nothing else of the project.
package domain

import (
	"encoding/json"
	"time"
)

// Event is a fact that happened, named in the past tense (ContactCreated, TagApplied, ...).
// Its type name and schema version are registered once (see registry.go).
type Event interface {
	EventType() string
}

// SecretEvent is implemented by events that hold a secret: a webhook signing secret, which the
// log keeps in the clear since deliveries are signed with it, or an activation token, which it
// keeps sealed with the server key. Every view of the log outside the service (the history of
// auditors) shows Redacted instead.
type SecretEvent interface {
	Event
	Redacted() Event
}

// RedactedSecret stands for a secret in views of the log.
const RedactedSecret = "[redacted]"

// ContactEvent is implemented by events that live on another stream but concern a contact
// (a lead, a form submission, a booking), so that the contact's history can list them.
type ContactEvent interface {
	Event
	ContactRef() string
}

// SubscriptionEvent is implemented by events that belong to a subscription's history, whichever
// stream they live on, so that the history can list them in log order: for a billing
// subscription its payments, refunds and cancellation and the activation its purchase issued;
// for a webhook subscription its own stream. SubscriptionRef is "" for an event of a one-time
// purchase.
type SubscriptionEvent interface {
	Event
	SubscriptionRef() string
}

// Metadata travels with every recorded event: whose data it is and what caused it.
type Metadata struct {
	AccountID     string `json:"accountId"`
	Actor         string `json:"actor"`
	RequestID     string `json:"requestId,omitempty"`
	CausationID   string `json:"causationId,omitempty"`
	CorrelationID string `json:"correlationId,omitempty"`
	// IdempotencyID is the claim of the Idempotency-Key the request carried, if any. The log
	// holds at most one append per id (eventstore), so a request is never performed twice.
	IdempotencyID string `json:"idempotencyId,omitempty"`
}

// Recorded is an event as the log stores it. Data stays encoded until a reader asks for it,
// so that a projection decodes only the event types it cares about.
type Recorded struct {
	ID            string
	StreamID      string
	Version       int64
	Position      int64
	Type          string
	SchemaVersion int
	OccurredAt    time.Time
	Data          json.RawMessage
	Metadata      Metadata
}

// Decode returns the typed event, upcast to the current schema version.
func (r Recorded) Decode() (Event, error) {
	return DecodeEvent(r.Type, r.SchemaVersion, r.Data)
}

// StreamAppend is what one aggregate adds to its stream in a command.
type StreamAppend struct {
	StreamID string
	// ExpectedVersion is the stream version the decision was based on: 0 for a new stream.
	ExpectedVersion int64
	Events          []Event
}

// Actor names who performs a command: an API key ("key:ID") or the operator ("operator").
type Actor string

// OperatorActor is the actor of every operator API command.
const OperatorActor Actor = "operator"

// KeyActor is the actor of a command performed with an API key.
func KeyActor(keyID string) Actor { return Actor("key:" + keyID) }

// AnyVersion as an expected version skips the concurrency check: for streams that only ever
// receive independent facts.
const AnyVersion int64 = -1

// After returns the events of a position-ordered batch that come after pos: what a reader that
// applied the log up to pos has yet to apply of it.
func After(batch []Recorded, pos int64) []Recorded {
	for i, e := range batch {
		if e.Position > pos {
			return batch[i:]
		}
	}
	return nil
}
