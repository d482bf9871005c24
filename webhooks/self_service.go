package webhooks

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// SelfService is what an integrator does with its own subscriptions through the integration API
// (decisions.md "Subscriptions, deliveries, replay, test"): read their deliveries, replay a
// window of past events, send a test event.
type SelfService struct {
	db            *sqldb.DB
	log           AccountLog
	subscriptions *Subscriptions
	deliveries    *Deliveries
	samples       *Samples
	dispatcher    *Dispatcher
	events        *Catalogue
	// rows makes a replay's outbox rows exactly as the projector makes live ones; replays take
	// turns with it (mu), as it keeps per-call bookkeeping.
	mu      sync.Mutex
	rows    *Projector
	replays replays
	// now judges the window asked for; clock judges the replays' claims (replays.go): the
	// service's clock, which tests move forward to let a claim run out.
	now, clock func() time.Time
	// AfterBatch, when set, is called after each batch of a replay is committed, with the
	// replay's id. Not for production: tests hold a replay between two batches with it.
	AfterBatch func(replayID string)
}

// NewSelfService serves the self-service endpoints: it reads the log through log, records
// replayed deliveries in db with up to maxAttempts attempts each, sealing the bodies that carry
// a secret with sealer, and sends test events through dispatcher. clock (nil: time.Now) is the
// service's clock, which judges how long a replay's recorder holds it.
func NewSelfService(db *sqldb.DB, log AccountLog, maxAttempts int, sealer Sealer, subscriptions *Subscriptions, deliveries *Deliveries,
	samples *Samples, dispatcher *Dispatcher, clock func() time.Time) *SelfService {
	if clock == nil {
		clock = time.Now
	}
	return &SelfService{db: db, log: log, subscriptions: subscriptions, deliveries: deliveries, samples: samples, dispatcher: dispatcher,
		events: Events, rows: &Projector{dialect: db.Dialect, maxAttempts: maxAttempts, events: Events, sealer: sealer}, replays: replays{db: db},
		now: time.Now, clock: clock}
}

// Disabled reasons (Subscription.StatusReason): the subscription's code, then why.
const (
	ReasonGone    = "gone: the target answered 410 Gone"
	ReasonFailing = "failing: no delivery succeeded for 5 days"
)

// DisabledReason is the code of a disabled subscription's reason, as the integration API shows
// it: "failing" or "gone" ("" for one that is not disabled). Subscriptions disabled before the
// codes existed were disabled on a 410.
func (s Subscription) DisabledReason() string {
	if s.Status != "disabled" {
		return ""
	}
	if strings.HasPrefix(s.StatusReason, "failing") {
		return "failing"
	}
	return "gone"
}

// usable returns a subscription of the account that may be replayed to or tested: 404 for a
// deleted one, as for one that never existed.
func (s *SelfService) usable(ctx context.Context, accountID, id string) (Subscription, error) {
	sub, err := s.subscriptions.Get(ctx, accountID, id)
	if err == nil && sub.Status == "deleted" {
		return Subscription{}, domain.NotFound("subscription not found")
	}
	return sub, err
}

// Subscription returns a subscription of the account that is not deleted (403 another
// account's, 404 none).
func (s *SelfService) Subscription(ctx context.Context, accountID, id string) (Subscription, error) {
	return s.usable(ctx, accountID, id)
}

type newestCursor struct {
	CreatedAt int64  `json:"c"`
	ID        string `json:"i"`
}

// Deliveries returns one page of a subscription's deliveries, newest first, with their attempts,
// narrowed to a status unless status is "". Another account's subscription is a domain
// Forbidden error.
func (s *SelfService) Deliveries(ctx context.Context, accountID, subscriptionID, status string, page paging.Page) ([]Delivery, string, error) {
	switch status {
	case "", "pending", "succeeded", "failed":
	default:
		return nil, "", domain.InvalidField("status", "status must be pending, succeeded or failed")
	}
	if _, err := s.usable(ctx, accountID, subscriptionID); err != nil {
		return nil, "", err
	}
	before := newestCursor{CreatedAt: 1<<63 - 1}
	if page.Cursor != "" {
		if err := paging.DecodeCursor(page.Cursor, &before); err != nil {
			return nil, "", err
		}
	}
	out, err := s.deliveries.query(ctx, fmt.Sprintf(selectDeliveries+` WHERE subscription_id = $1 AND ($2 = '' OR status = $2)
		AND (created_at < $3 OR (created_at = $3 AND id < $4)) ORDER BY created_at DESC, id DESC LIMIT %d`, sqldb.TextLimit(page.Limit+1)),
		subscriptionID, status, before.CreatedAt, before.ID)
	if err != nil {
		return nil, "", err
	}
	out, next := paging.Cut(out, page.Limit, func(d Delivery) any { return newestCursor{CreatedAt: d.CreatedAt.UnixMilli(), ID: d.ID} })
	return out, next, s.deliveries.attachAttempts(ctx, out)
}

// ReplayRequest asks for the events of a window to be delivered again.
type ReplayRequest struct {
	AccountID, SubscriptionID string
	Since                     time.Time
	Until                     time.Time // zero: up to now
	Types                     []string  // none: every type the subscription receives
	// IdempotencyID is the Idempotency-Key claim of the request ("" without a key): a retry of the
	// request, which carries the same claim, answers the replay it asked for.
	IdempotencyID string
}

// Replay is an accepted replay: its id and how many deliveries it recorded.
type Replay struct {
	ID    string
	Count int
}

// replayPage is how many events a replay reads, maps and records at a time, in one transaction:
// its memory does not grow with the window, nor does the time it holds the writer.
const replayPage = 500

// Replay records, for every outbound event of the window that the subscription's events and
// filters match as they are now, a new delivery of the same envelope (the same id and body; a new
// delivery id derived from event, subscription and replay), oldest first, and answers once every
// one is recorded. It records them in batches of replayPage events, each its own transaction
// with the replay's progress (replays.go), so the writer is never held for long; the dispatcher
// sends each batch's deliveries as soon as it is committed, with the usual retries, in log order
// per billing subscription (the ordering key), like live deliveries. A replay cut short (the
// process stopped) is finished, under the same id, by the worker that resumes replays, or by a
// retry of the request with the same Idempotency-Key, which answers that replay. A replay goes
// on when the client goes away.
func (s *SelfService) Replay(ctx context.Context, req ReplayRequest) (Replay, error) {
	ctx = context.WithoutCancel(ctx)
	// A retry of a request that asked for a replay answers it, as it is now: not judged again.
	if earlier, found, err := s.replays.ofRequest(ctx, req.IdempotencyID); err != nil {
		return Replay{}, err
	} else if found {
		if earlier.accountID != req.AccountID || earlier.subscriptionID != req.SubscriptionID {
			return Replay{}, fmt.Errorf("webhooks: replay %s of Idempotency-Key claim %s is of another subscription", earlier.id, req.IdempotencyID)
		}
		return s.finish(ctx, earlier.id)
	}
	now := s.now()
	switch {
	case req.Since.IsZero():
		return Replay{}, domain.InvalidField("since", "since is required")
	case req.Since.After(now):
		return Replay{}, domain.InvalidField("since", "since is in the future")
	case req.Since.Before(now.Add(-FeedRetention)):
		return Replay{}, domain.InvalidField("since", "since is older than the %d days the event feed keeps", int(FeedRetention/(24*time.Hour)))
	case !req.Until.IsZero() && !req.Until.After(req.Since):
		return Replay{}, domain.InvalidField("until", "until must be after since")
	}
	if _, err := s.events.sourcesOf(req.Types); err != nil {
		return Replay{}, err
	}
	sub, err := s.usable(ctx, req.AccountID, req.SubscriptionID)
	if err != nil {
		return Replay{}, err
	}
	if sub.Status != "active" {
		return Replay{}, domain.Conflict("the subscription is disabled: enable it first")
	}
	// A window without until ends at the request: a replay resumed after a crash, minutes later,
	// sends nothing that happened since (those events had their own deliveries).
	until := req.Until
	if until.IsZero() {
		until = now.Add(time.Millisecond) // events of this very millisecond included
	}
	row := replayRow{id: "rpl_" + uuid.Must(uuid.NewV7()).String(), accountID: req.AccountID, subscriptionID: req.SubscriptionID,
		since: req.Since, until: until, types: req.Types, idempotencyID: req.IdempotencyID}
	holder := newReplayHolder()
	at := s.clock()
	row, created, err := s.replays.create(ctx, row, holder, at.UnixMilli(), at.Add(ReplayClaim).UnixMilli())
	if err != nil {
		return Replay{}, err
	}
	if !created { // another attempt of the same request was first
		return s.finish(ctx, row.id)
	}
	replay, err := s.record(ctx, row, holder)
	if errors.Is(err, errReplayTakenOver) {
		return s.finish(ctx, row.id)
	}
	return replay, err
}

// finish returns a replay once it is recorded: it records the rest itself when the replay's
// claim ran out (its recorder stopped), else waits for the recorder that holds it.
func (s *SelfService) finish(ctx context.Context, id string) (Replay, error) {
	for {
		row, err := s.replays.get(ctx, id)
		if err != nil {
			return Replay{}, err
		}
		if row.state == replayRecorded {
			return Replay{ID: row.id, Count: row.count}, nil
		}
		holder := newReplayHolder()
		now := s.clock()
		if ok, err := s.replays.claim(ctx, id, holder, now.UnixMilli(), now.Add(ReplayClaim).UnixMilli()); err != nil {
			return Replay{}, err
		} else if ok {
			if row, err = s.replays.get(ctx, id); err != nil { // as the claim found it
				return Replay{}, err
			}
			replay, err := s.record(ctx, row, holder)
			if !errors.Is(err, errReplayTakenOver) {
				return replay, err
			}
		}
		select {
		case <-ctx.Done():
			return Replay{}, ctx.Err()
		case <-time.After(replayWait):
		}
	}
}

// replayWait is how often a request whose replay another recorder holds looks whether it is done.
const replayWait = 50 * time.Millisecond

// record records a replay held by holder from where it is, a batch at a time, and returns it
// once recorded. A subscription disabled or deleted meanwhile ends it: the rest is not recorded.
// A page of which a person was erased between its read and its batch's commit is read again, so
// that no delivery carries an erased person's values (replays.noneErasedSince). It returns
// errReplayTakenOver when another recorder took the replay over.
func (s *SelfService) record(ctx context.Context, row replayRow, holder string) (Replay, error) {
	sources, err := s.events.sourcesOf(row.types)
	if err != nil {
		return Replay{}, err
	}
	idOf := func(eventID, subscriptionID string) string {
		return replayDeliveryID(eventID, subscriptionID, row.id)
	}
	q := eventstore.AccountEventsQuery{AccountID: row.accountID, Types: sources, Since: row.since, Until: row.until, After: row.upTo, Limit: replayPage}
	// The persons a batch found erased: erased before every later read of the log, which opens
	// nothing of them (their values read as null), so later batches need not ask again.
	erased := map[string]bool{}
	for row.state == replayRecording {
		// The subscription as it is now: a replay to one disabled or deleted meanwhile ends.
		sub, err := s.subscriptions.Get(ctx, row.accountID, row.subscriptionID)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return Replay{}, err
		}
		b := batch{upTo: row.upTo, last: true, accountID: row.accountID}
		if err == nil && sub.Status == "active" {
			page, err := s.log.ReadAccountEvents(ctx, q)
			if err != nil {
				return Replay{}, fmt.Errorf("webhooks: replay: %w", err)
			}
			target := []subscriptionRow{{id: sub.ID, events: sub.Events, filters: sub.Filters}}
			var persons []string
			if b.deliveries, persons, err = s.deliveriesOf(page, target, idOf); err != nil {
				return Replay{}, err
			}
			for _, p := range persons {
				if !erased[p] {
					b.persons = append(b.persons, p)
				}
			}
			if len(page) > 0 {
				b.upTo = page[len(page)-1].Position
			}
			b.last = len(page) < replayPage
		}
		now := s.clock()
		b.now, b.claimedUntil = now.UnixMilli(), now.Add(ReplayClaim).UnixMilli()
		// The commit records nothing if a person of the page was erased since it was read, or is
		// being erased (replays.noneErasedSince): the page is then read again, and mapped again.
		var since erasedSinceRead
		switch err := s.replays.commit(ctx, row.id, holder, b); {
		case errors.As(err, &since):
			for _, p := range since.persons {
				erased[p] = true
			}
			continue
		case errors.Is(err, errErasing):
			select {
			case <-ctx.Done():
				return Replay{}, ctx.Err()
			case <-time.After(erasingWait):
			}
			continue
		case err != nil:
			return Replay{}, err
		}
		row.upTo, row.count = b.upTo, row.count+len(b.deliveries)
		if b.last {
			row.state = replayRecorded
		}
		if len(b.deliveries) > 0 {
			s.dispatcher.Wake()
		}
		if s.AfterBatch != nil {
			s.AfterBatch(row.id)
		}
		q.After = row.upTo
	}
	return Replay{ID: row.id, Count: row.count}, nil
}

// deliveriesOf makes the rows of webhook_deliveries of a page of the log, for the target
// subscription, as the projector makes live ones, and returns the persons whose personal values
// they may carry (domain.PersonalEvent), each once.
func (s *SelfService) deliveriesOf(page []domain.Recorded, target []subscriptionRow, idOf func(eventID, subscriptionID string) string) ([][]any, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.rows.notOpened = nil }() // recorded failed with their reason; a replay reports nothing more
	var rows [][]any
	var persons []string
	seen := map[string]bool{}
	for _, r := range page {
		if !s.events.handles(r.Type) {
			continue
		}
		e, err := r.Decode()
		if err != nil {
			return nil, nil, fmt.Errorf("webhooks: replay: decode %s at %d: %w", r.Type, r.Position, err)
		}
		out, ok, err := s.events.outboundOf(r, e, s.rows.sealer)
		if err != nil {
			return nil, nil, fmt.Errorf("webhooks: replay %s at %d: %w", r.Type, r.Position, err)
		}
		if !ok {
			continue
		}
		made, err := s.rows.deliveriesOf(r, out, target, idOf)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, made...)
		if pe, ok := e.(domain.PersonalEvent); ok && len(made) > 0 && pe.Person() != "" && !seen[pe.Person()] {
			seen[pe.Person()] = true
			persons = append(persons, pe.Person())
		}
	}
	return rows, persons, nil
}

// replayDeliveryID is the id of an event's delivery to a subscription made by one replay: new, so
// that the receiver tells it from the first delivery, and derived, so that it never changes.
func replayDeliveryID(eventID, subscriptionID, replayID string) string {
	sum := sha256.Sum256([]byte(eventID + "\x00" + subscriptionID + "\x00" + replayID))
	return "dlv_" + idEncoding.EncodeToString(sum[:16])
}
