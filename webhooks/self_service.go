package webhooks

import (
	"context"
	"crypto/sha256"
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
	mu   sync.Mutex
	rows *Projector
	now  func() time.Time
}

// NewSelfService serves the self-service endpoints: it reads the log through log, records
// replayed deliveries in db with up to maxAttempts attempts each, sealing the bodies that carry
// a secret with sealer, and sends test events through dispatcher.
func NewSelfService(db *sqldb.DB, log AccountLog, maxAttempts int, sealer Sealer, subscriptions *Subscriptions, deliveries *Deliveries,
	samples *Samples, dispatcher *Dispatcher) *SelfService {
	return &SelfService{db: db, log: log, subscriptions: subscriptions, deliveries: deliveries, samples: samples, dispatcher: dispatcher,
		events: Events, rows: &Projector{dialect: db.Dialect, maxAttempts: maxAttempts, events: Events, sealer: sealer}, now: time.Now}
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
		AND (created_at < $3 OR (created_at = $3 AND id < $4)) ORDER BY created_at DESC, id DESC LIMIT %d`, page.Limit+1),
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
}

// Replay is an accepted replay: its id and how many deliveries it recorded.
type Replay struct {
	ID    string
	Count int
}

// replayPage is how many events a replay reads, maps and records at a time: its memory does not
// grow with the window.
const replayPage = 500

// Replay records, for every outbound event of the window that the subscription's events and
// filters match as they are now, a new delivery of the same envelope (the same id and body; a new
// delivery id), oldest first, all in one transaction: once answered, a crash loses none, and
// until then none is recorded. The dispatcher sends them with the usual retries, in log order per
// billing subscription (the ordering key), like live deliveries.
func (s *SelfService) Replay(ctx context.Context, req ReplayRequest) (Replay, error) {
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
	sources, err := s.events.sourcesOf(req.Types)
	if err != nil {
		return Replay{}, err
	}
	sub, err := s.usable(ctx, req.AccountID, req.SubscriptionID)
	if err != nil {
		return Replay{}, err
	}
	if sub.Status != "active" {
		return Replay{}, domain.Conflict("the subscription is disabled: enable it first")
	}
	target := []subscriptionRow{{id: sub.ID, events: sub.Events, filters: sub.Filters}}
	replay := Replay{ID: "rpl_" + uuid.Must(uuid.NewV7()).String()}
	idOf := func(eventID, subscriptionID string) string {
		return replayDeliveryID(eventID, subscriptionID, replay.ID)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return Replay{}, fmt.Errorf("webhooks: begin replay: %w", err)
	}
	defer tx.Rollback()
	q := eventstore.AccountEventsQuery{AccountID: req.AccountID, Types: sources, Since: req.Since, Until: req.Until, Limit: replayPage}
	for {
		batch, err := s.log.ReadAccountEvents(ctx, q)
		if err != nil {
			return Replay{}, fmt.Errorf("webhooks: replay: %w", err)
		}
		var rows [][]any
		for _, r := range batch {
			out, ok, err := s.events.toOutbound(r, s.rows.sealer)
			if err != nil {
				return Replay{}, fmt.Errorf("webhooks: replay %s at %d: %w", r.Type, r.Position, err)
			}
			if !ok {
				continue
			}
			made, err := s.rows.deliveriesOf(r, out, target, idOf)
			if err != nil {
				return Replay{}, err
			}
			rows = append(rows, made...)
		}
		s.rows.notOpened = nil // recorded failed with their reason; a replay reports nothing more
		if err := sqldb.ExecRows(ctx, tx, s.db.Dialect, `INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body, body_sealed,
				status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at) VALUES `, ``, rows); err != nil {
			return Replay{}, fmt.Errorf("webhooks: record replayed deliveries: %w", err)
		}
		replay.Count += len(rows)
		if len(batch) < replayPage {
			break
		}
		q.After = batch[len(batch)-1].Position
	}
	if err := tx.Commit(); err != nil {
		return Replay{}, fmt.Errorf("webhooks: commit replay: %w", err)
	}
	if replay.Count > 0 {
		s.dispatcher.Wake()
	}
	return replay, nil
}

// replayDeliveryID is the id of an event's delivery to a subscription made by one replay: new, so
// that the receiver tells it from the first delivery, and derived, so that it never changes.
func replayDeliveryID(eventID, subscriptionID, replayID string) string {
	sum := sha256.Sum256([]byte(eventID + "\x00" + subscriptionID + "\x00" + replayID))
	return "dlv_" + idEncoding.EncodeToString(sum[:16])
}
