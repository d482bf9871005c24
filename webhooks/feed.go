package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/projections/paging"
)

// FeedRetention is how far back the event feed and replays reach (decisions.md "Event feed":
// at least 30 days). The log itself keeps every event; older ones are out of the feed's window.
const FeedRetention = 30 * 24 * time.Hour

// AccountLog reads a window of an account's events of some types, oldest first, skipping none
// while writes go on (eventstore.Store).
type AccountLog interface {
	ReadAccountEvents(ctx context.Context, q eventstore.AccountEventsQuery) ([]domain.Recorded, error)
}

// Feed is the event feed of GET /api/v1/events: every outbound event of an account, whether or
// not a subscription matched it, as the envelope webhooks deliver (the same id, type, createdAt
// and data: the projector's mapping, Catalogue.toOutbound).
type Feed struct {
	log    AccountLog
	events *Catalogue
	opener Opener
	now    func() time.Time
}

// NewFeed reads from log; opener opens the activation tokens the log keeps sealed, for keys that
// may read them.
func NewFeed(log AccountLog, opener Opener) *Feed {
	return &Feed{log: log, events: Events, opener: opener, now: time.Now}
}

// FeedQuery asks for one page of the feed.
type FeedQuery struct {
	AccountID string
	Cursor    string   // the nextCursor of the previous page; "" starts at the oldest event kept
	Types     []string // outbound types or their aliases; none: every type
	Limit     int
	// RevealSecrets shows activation tokens (a key with checkout:read); otherwise they read
	// domain.RedactedSecret everywhere in the envelope, the activation url included.
	RevealSecrets bool
}

// feedCursor is the log position of the last event of a page.
type feedCursor struct {
	Position int64 `json:"p"`
}

// Page returns one page of the feed, oldest first, and the cursor to poll with next: always
// set, it returns only what comes after this page (possibly nothing yet). An unknown type is a
// domain Invalid error, a malformed cursor paging.ErrBadCursor.
func (f *Feed) Page(ctx context.Context, q FeedQuery) ([]Envelope, string, error) {
	sources, err := f.events.sourcesOf(q.Types)
	if err != nil {
		return nil, "", err
	}
	var after feedCursor
	if q.Cursor != "" {
		if err := paging.DecodeCursor(q.Cursor, &after); err != nil {
			return nil, "", err
		}
	}
	recorded, err := f.log.ReadAccountEvents(ctx, eventstore.AccountEventsQuery{
		AccountID: q.AccountID, Types: sources, After: after.Position, Since: f.now().Add(-FeedRetention), Limit: q.Limit,
	})
	if err != nil {
		return nil, "", fmt.Errorf("webhooks: read the feed: %w", err)
	}
	out := make([]Envelope, 0, len(recorded))
	for _, r := range recorded {
		env, ok, err := f.envelopeOf(r, q.RevealSecrets)
		if err != nil {
			return nil, "", err
		}
		if ok {
			out = append(out, env)
		}
		after.Position = r.Position
	}
	return out, paging.EncodeCursor(after), nil
}

// envelopeOf is the envelope of a recorded event, its secrets opened or redacted. A secret that
// cannot be opened (its key is gone) shows redacted, as webhooks would not send it at all.
func (f *Feed) envelopeOf(r domain.Recorded, reveal bool) (Envelope, bool, error) {
	e, err := r.Decode()
	if err != nil {
		return Envelope{}, false, fmt.Errorf("webhooks: decode %s at %d: %w", r.Type, r.Position, err)
	}
	if reveal {
		o, ok, err := f.events.outboundOf(r, e, f.opener)
		if err != nil || !ok || o.notOpened == nil {
			return o.envelope, ok, err
		}
	}
	if secret, ok := e.(domain.SecretEvent); ok {
		e = secret.Redacted()
	}
	o, ok, err := f.events.outboundOf(r, e, redacting{})
	return o.envelope, ok, err
}

// sourcesOf are the domain event types the outbound types come from (every outbound type when
// none is named); an unknown name is a domain Invalid error.
func (c *Catalogue) sourcesOf(names []string) ([]string, error) {
	if len(names) == 0 {
		names = c.Names()
	}
	seen := map[*outboundEvent]bool{}
	var sources []string
	for _, n := range names {
		e, ok := c.lookup(n)
		if !ok {
			return nil, domain.InvalidField("types", "types: unknown event type %q", n)
		}
		if !seen[e] {
			seen[e] = true
			sources = append(sources, e.sourceTypes()...)
		}
	}
	return sources, nil
}
