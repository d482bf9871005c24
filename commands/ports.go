// Package commands holds one handler per command. A handler validates its input, loads the
// aggregates it needs in a session, lets domain methods decide, and appends what they recorded
// in one atomic, expected-version append. The interfaces below are what handlers need from the
// outside; infra/ and projections/ implement them.
package commands

import (
	"context"

	"github.com/funnelhq/funnel/domain"
)

// EventStore is the event log as commands use it.
type EventStore interface {
	// ReadStreamFrom returns the events of a stream after a version (0: all of them), oldest
	// first, at a cost that does not grow with the events before it.
	ReadStreamFrom(ctx context.Context, streamID string, afterVersion int64) ([]domain.Recorded, error)
	Append(ctx context.Context, meta domain.Metadata, appends ...domain.StreamAppend) (int64, error)
}

// TagCatalogue lists an account's tags with their automations (the tags read model). Commands
// resolve tag names and ids against it; tags are created through the operator API, which waits
// for the read model before it answers, so a created tag is always there to resolve.
type TagCatalogue interface {
	AccountTags(ctx context.Context, accountID string) ([]domain.TagRef, error)
}

// Meta says who performs a command and in which request. It becomes every event's metadata.
type Meta struct {
	AccountID     string
	Actor         domain.Actor
	RequestID     string
	CorrelationID string
}

func (m Meta) metadata() domain.Metadata {
	correlation := m.CorrelationID
	if correlation == "" {
		correlation = m.RequestID
	}
	return domain.Metadata{
		AccountID:     m.AccountID,
		Actor:         string(m.Actor),
		RequestID:     m.RequestID,
		CausationID:   m.RequestID,
		CorrelationID: correlation,
	}
}

// ProductCatalogue lists the pricing tiers and bumps of an account's products (the products read
// model), which webhook filters may name. Products are created through the operator API, which
// waits for the read model before it answers, so a created product is always there to check.
type ProductCatalogue interface {
	PricingOptions(ctx context.Context, accountID string) (tierIDs, bumpIDs []string, err error)
}

// TargetChecker decides whether a URL may receive webhooks (the SSRF guard) and returns it
// normalized; refusals are domain.Invalid errors.
type TargetChecker interface {
	CheckURL(ctx context.Context, rawURL string) (string, error)
}

// OutboundEvents is the catalogue of outbound webhook event types (webhooks.Events), which a
// subscription checks the types it names against.
type OutboundEvents = domain.EventNames

// Sealer seals a secret that the log must keep but must not reveal (an activation token) with the
// server key, which is kept outside the database (infra/sealing). What it seals is bound to
// associatedData: it opens for nothing else. Open gives back what Seal sealed: a purchase retried
// with its txnId answers the activation token the first answer showed.
type Sealer interface {
	Seal(plaintext, associatedData []byte) (string, error)
	Open(sealed string, associatedData []byte) ([]byte, error)
}
