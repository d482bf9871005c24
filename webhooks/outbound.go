// Package webhooks turns domain events into signed outbound webhooks (DESIGN.md invariant 8):
// a projector maps events to outbound events and records one delivery per matching subscription
// in the transaction that moves its checkpoint (an outbox); a dispatcher claims due deliveries,
// signs and sends them, and retries them durably. Which outbound events exist, where they come
// from, what they carry and which filters apply to them is one table: events.go.
package webhooks

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// Envelope is the body of every delivery (integration-api.md section 6). ID is the domain
// event's id: the same for every subscription and every retry.
type Envelope struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CreatedAt string `json:"createdAt"`
	Data      any    `json:"data"`
}

// Wire is the envelope as the generated union of the document's webhook bodies, its members as
// a delivery sends them.
func (e Envelope) Wire() (wire.WebhookEvent, error) {
	var out wire.WebhookEvent
	b, err := json.Marshal(e)
	if err == nil {
		err = out.UnmarshalJSON(b)
	}
	if err != nil {
		return out, fmt.Errorf("webhooks: encode %s: %w", e.Type, err)
	}
	return out, nil
}

// outbound is a domain event as webhooks see it.
type outbound struct {
	event     *outboundEvent
	envelope  Envelope
	resources resources
	// notOpened says why a secret of the payload could not be opened (errNotOpened): the
	// envelope has no data, and its deliveries are recorded failed, unsent.
	notOpened error
}

// holdsSecret tells whether the payload carries a secret, so that its body is stored sealed.
func (o outbound) holdsSecret() bool {
	return o.event.holdsSecret != nil && o.envelope.Data != nil && o.event.holdsSecret(o.envelope.Data)
}

// wantedBy tells whether a subscription to events with filters receives it.
func (o outbound) wantedBy(events []string, filters domain.WebhookFilters) bool {
	return slices.Contains(events, o.event.name) && o.event.matches(filters, o.resources)
}

// body encodes an envelope: the bytes every attempt of a delivery sends.
func (o outbound) body() ([]byte, error) {
	b, err := json.Marshal(o.envelope)
	if err != nil {
		return nil, fmt.Errorf("webhooks: encode %s: %w", o.envelope.Type, err)
	}
	return b, nil
}
