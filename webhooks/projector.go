package webhooks

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// Projector is the webhook projection. It keeps the subscriptions table itself, from the same
// ordered log, so that an event is matched against the subscriptions and filters as they were
// at that point of the log, not as they are when a projection happens to run. For each matching
// subscription it records a delivery in the outbox, in the transaction that moves its checkpoint.
type Projector struct {
	dialect     sqldb.Dialect
	maxAttempts int
	events      *Catalogue
	sealer      Sealer
	observer    Observer
	log         *zap.Logger
	// wake tells the dispatcher that deliveries may be due; the pipeline calls Committed after
	// each transaction of this projection commits.
	wake func()
	// givenUp counts the deliveries the current transaction gave up (their subscription ended),
	// and notOpened the deliveries it recorded failed because a secret of their payload could not
	// be opened, both reported once it commits. The pipeline calls Apply and Committed in turn,
	// from one goroutine.
	givenUp   int
	notOpened []notOpenedDelivery
	// giveUpChunk is how many pending deliveries of an ended subscription one statement fails
	// (giveUpChunkSize; tests make it smaller).
	giveUpChunk int
}

// giveUpChunkSize bounds the rows of one statement that fails an ended subscription's pending
// deliveries: after a long outage of its receiver they may be many, and on SQLite a statement's
// journal (the pages it changed, as they were) is kept in memory (sqldb's openSQLite).
const giveUpChunkSize = 1000

// notOpenedDelivery is a delivery recorded failed because its payload's secret could not be opened.
type notOpenedDelivery struct {
	id, eventType string
	err           error
}

// NewProjector records deliveries, in a database of the given dialect, with up to maxAttempts
// attempts each. sealer opens what the log keeps sealed (activation tokens) and seals the bodies
// that carry a secret. The observer counts the deliveries given up when their subscription ends
// and those whose secret could not be opened, which are logged too; wake is called when new
// deliveries are due.
func NewProjector(dialect sqldb.Dialect, maxAttempts int, sealer Sealer, observer Observer, log *zap.Logger, wake func()) *Projector {
	return &Projector{dialect: dialect, maxAttempts: maxAttempts, events: Events, sealer: sealer, observer: observer, log: log, wake: wake,
		giveUpChunk: giveUpChunkSize}
}

// Name identifies the projection's checkpoint.
func (*Projector) Name() string { return "webhooks" }

// Tables are the tables the projector writes: the subscriptions, and the outbox of deliveries
// with their attempts (which the dispatcher writes too).
var Tables = []string{"webhook_subscriptions", "webhook_deliveries", "webhook_attempts"}

var subscriptionEvents = map[string]bool{
	domain.WebhookSubscribed{}.EventType():           true,
	domain.WebhookSubscriptionDeleted{}.EventType():  true,
	domain.WebhookSubscriptionDisabled{}.EventType(): true,
	domain.WebhookSecretRotated{}.EventType():        true,
	domain.WebhookSubscriptionEnabled{}.EventType():  true,
}

// Handles tells whether the projector does anything with events of a type.
func (p *Projector) Handles(eventType string) bool {
	return subscriptionEvents[eventType] || eventType == contactErased || p.events.handles(eventType)
}

// contactErased is the event whose person the outbox forgets (erasure.go).
var contactErased = domain.ContactErased{}.EventType()

// Reads tells which events requests see the effect of: the subscriptions (their lists are
// served from this read model). The deliveries other events make are sent later anyway, so a
// write of those need not wait for them (pipeline.Reader).
//
// An erasure is answered once the outbox forgot the person too.
func (p *Projector) Reads(eventType string) bool {
	return subscriptionEvents[eventType] || eventType == contactErased
}

// Committed wakes the dispatcher after deliveries were recorded, and counts the deliveries the
// transaction gave up: only now, since a transaction that rolls back gave none up.
func (p *Projector) Committed() {
	for range p.givenUp {
		p.observer.DeliveryGivenUp()
	}
	for _, d := range p.notOpened {
		p.observer.DeliveryNotOpened()
		p.log.Error("webhook delivery recorded failed: a secret of its payload could not be opened", zap.String("delivery", d.id),
			zap.String("event", d.eventType), zap.Error(d.err))
	}
	p.givenUp, p.notOpened = 0, nil
	if p.wake != nil {
		p.wake()
	}
}

// Apply applies subscription changes and records the deliveries of outbound events (ApplyIn).
func (p *Projector) Apply(ctx context.Context, tx *sql.Tx, batch []domain.Recorded) error {
	return p.ApplyIn(ctx, sqldb.ApplierOf(tx), batch)
}

// ApplyIn applies subscription changes and records the deliveries of outbound events through tx:
// on PostgreSQL the relay sends its writes with the commit (sqldb.PipelinedTx).
func (p *Projector) ApplyIn(ctx context.Context, tx sqldb.Applier, batch []domain.Recorded) error {
	// Count afresh: a transaction that failed gave nothing up, and its batch, applied again,
	// gives up the same deliveries.
	p.givenUp, p.notOpened = 0, nil
	active := map[string][]subscriptionRow{} // by account, loaded once per batch
	var deliveries [][]any
	flush := func() error {
		err := sqldb.ExecRows(ctx, tx, p.dialect, `INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body, body_sealed,
				status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at) VALUES `,
			// A replay of the log (a rebuild, a redelivered batch) derives the same ids: nothing twice.
			` ON CONFLICT (id) DO NOTHING`, deliveries)
		deliveries = deliveries[:0]
		if err != nil {
			return fmt.Errorf("webhooks: record deliveries: %w", err)
		}
		return nil
	}
	for _, r := range batch {
		if subscriptionEvents[r.Type] {
			// Deliveries recorded so far were matched against the subscriptions before this change.
			if err := flush(); err != nil {
				return err
			}
			if err := p.applySubscription(ctx, tx, r); err != nil {
				return err
			}
			delete(active, r.Metadata.AccountID)
			continue
		}
		if r.Type == contactErased {
			if err := flush(); err != nil {
				return err
			}
			if err := eraseDeliveries(ctx, tx, p.dialect, r); err != nil {
				return err
			}
			continue
		}
		out, ok, err := p.events.toOutbound(r, p.sealer)
		if err != nil {
			return fmt.Errorf("webhooks: map %s at %d: %w", r.Type, r.Position, err)
		}
		if !ok {
			continue
		}
		account := r.Metadata.AccountID
		subs, loaded := active[account]
		if !loaded {
			if subs, err = activeSubscriptions(ctx, tx, account); err != nil {
				return err
			}
			active[account] = subs
		}
		rows, err := p.deliveriesOf(r, out, subs, DeliveryID)
		if err != nil {
			return err
		}
		deliveries = append(deliveries, rows...)
	}
	return flush()
}

type subscriptionRow struct {
	id      string
	events  []string
	filters domain.WebhookFilters
}

func activeSubscriptions(ctx context.Context, tx sqldb.Applier, accountID string) ([]subscriptionRow, error) {
	rows, err := tx.Query(ctx, `SELECT id, events, filters FROM webhook_subscriptions WHERE account_id = $1 AND status = 'active' ORDER BY position`, accountID)
	if err != nil {
		return nil, fmt.Errorf("webhooks: active subscriptions: %w", err)
	}
	defer rows.Close()
	var out []subscriptionRow
	for rows.Next() {
		var s subscriptionRow
		var events, filters string
		if err := rows.Scan(&s.id, &events, &filters); err != nil {
			return nil, fmt.Errorf("webhooks: scan subscription: %w", err)
		}
		if err := json.Unmarshal([]byte(events), &s.events); err != nil {
			return nil, fmt.Errorf("webhooks: subscription events: %w", err)
		}
		if err := json.Unmarshal([]byte(filters), &s.filters); err != nil {
			return nil, fmt.Errorf("webhooks: subscription filters: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// deliveriesOf returns the outbox rows of one outbound event: one per matching subscription. A
// body that carries a secret is stored sealed, bound to its delivery. When a secret of the payload
// could not be opened, each delivery is recorded failed at once, with the reason and no body:
// failing that one event loudly beats stalling every webhook behind it, and beats sending its
// payload without the secret it exists to hand over. idOf names each delivery (DeliveryID; a
// replay names its own, replayDeliveryID).
func (p *Projector) deliveriesOf(r domain.Recorded, out outbound, subs []subscriptionRow, idOf func(eventID, subscriptionID string) string) ([][]any, error) {
	var rows [][]any
	var body []byte
	now := time.Now().UnixMilli()
	for _, s := range subs {
		if !out.wantedBy(s.events, s.filters) {
			continue
		}
		id := idOf(r.ID, s.id)
		row := func(body string, sealed int, status, lastError string) []any {
			return []any{id, r.Metadata.AccountID, s.id, r.ID, out.envelope.Type, r.Position, out.resources.orderingKey, body, sealed,
				status, 0, p.maxAttempts, now, 0, 0, lastError, now, now}
		}
		if out.notOpened != nil {
			rows = append(rows, row("", 0, "failed", "not sent: "+out.notOpened.Error()))
			p.notOpened = append(p.notOpened, notOpenedDelivery{id: id, eventType: out.envelope.Type, err: out.notOpened})
			continue
		}
		if body == nil {
			var err error
			if body, err = out.body(); err != nil {
				return nil, err
			}
		}
		if !out.holdsSecret() {
			rows = append(rows, row(string(body), 0, "pending", ""))
			continue
		}
		sealed, err := p.sealer.Seal(body, bodySealing(id))
		if err != nil {
			return nil, fmt.Errorf("webhooks: seal the body of %s: %w", id, err)
		}
		rows = append(rows, row(sealed, 1, "pending", ""))
	}
	return rows, nil
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// DeliveryID is the id of the delivery of one event to one subscription: stable across retries
// and replays (X-Service-Delivery, webhook-id).
func DeliveryID(eventID, subscriptionID string) string {
	sum := sha256.Sum256([]byte(eventID + "\x00" + subscriptionID))
	return "dlv_" + idEncoding.EncodeToString(sum[:16])
}

func (p *Projector) applySubscription(ctx context.Context, tx sqldb.Applier, r domain.Recorded) error {
	e, err := r.Decode()
	if err != nil {
		return fmt.Errorf("webhooks: decode %s: %w", r.Type, err)
	}
	at := r.OccurredAt.UnixMilli()
	switch e := e.(type) {
	case domain.WebhookSubscribed:
		var events, filters []byte
		if events, err = json.Marshal(e.Events); err != nil {
			return fmt.Errorf("webhooks: encode the events of %s: %w", e.SubscriptionID, err)
		}
		if filters, err = json.Marshal(e.Filters); err != nil {
			return fmt.Errorf("webhooks: encode the filters of %s: %w", e.SubscriptionID, err)
		}
		secret, err := sealSecret(p.sealer, e.SubscriptionID, e.SealedSecret, e.Secret)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO webhook_subscriptions (id, account_id, kind, url, events, filters, secret, previous_secret, previous_valid_until,
				status, status_reason, created_at, updated_at, position, secrets_sealed)
			VALUES ($1, $2, $3, $4, $5, $6, $7, '', 0, 'active', '', $8, $8, $9, 1)`,
			e.SubscriptionID, e.AccountID, e.Kind, e.URL, string(events), string(filters), secret, at, r.Position)
	case domain.WebhookSecretRotated:
		err = p.rotate(ctx, tx, e, at)
	case domain.WebhookSubscriptionDeleted:
		err = p.stop(ctx, tx, e.SubscriptionID, "deleted", "subscription deleted", at)
	case domain.WebhookSubscriptionDisabled:
		err = p.stop(ctx, tx, e.SubscriptionID, "disabled", e.Reason, at)
	case domain.WebhookSubscriptionEnabled:
		// Active again from here on; a failing streak starts afresh (failing.go).
		_, err = tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET status = 'active', status_reason = '', failing_since = 0, updated_at = $1
			WHERE id = $2 AND status = 'disabled'`, at, e.SubscriptionID)
	}
	if err != nil {
		return fmt.Errorf("webhooks: %s at %d: %w", r.Type, r.Position, err)
	}
	return nil
}

// rotate applies a rotation at (unix ms): the new secret signs, the one it replaces signs beside
// it until PreviousValidUntil, and so do the secrets replaced before, each until its own end.
func (p *Projector) rotate(ctx context.Context, tx sqldb.Applier, e domain.WebhookSecretRotated, at int64) error {
	var current, previous, olderText string
	var previousUntil int64
	err := tx.QueryRow(ctx, `SELECT secret, previous_secret, previous_valid_until, older_secrets FROM webhook_subscriptions WHERE id = $1`,
		e.SubscriptionID).Scan(&current, &previous, &previousUntil, &olderText)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // no subscription to rotate (its creation is not in this read model)
	}
	if err != nil {
		return err
	}
	secret, err := sealSecret(p.sealer, e.SubscriptionID, e.SealedSecret, e.Secret)
	if err != nil {
		return err
	}
	// Version 2 keeps the new secret only: the one it replaces is the row's, sealed. Version 1
	// kept both in the clear.
	replaced := current
	if e.SealedSecret == "" {
		if replaced, err = sealSecret(p.sealer, e.SubscriptionID, "", e.PreviousSecret); err != nil {
			return err
		}
	}
	older, err := parseOlderSecrets(e.SubscriptionID, olderText)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET secret = $1, previous_secret = $2, previous_valid_until = $3, older_secrets = $4, updated_at = $5 WHERE id = $6`,
		secret, replaced, e.PreviousValidUntil.UnixMilli(), formatOlderSecrets(afterRotation(at, previous, previousUntil, older)), at, e.SubscriptionID)
	return err
}

// stop ends a subscription and gives up its pending deliveries at once, counting them for the
// observer. A replayed stop finds none pending: nothing is counted twice. A delivery a dispatcher
// is sending at that moment is given up too; the dispatcher records its attempt but leaves the
// delivery given up (Dispatcher.endedWhileSending), so it is neither counted twice nor retried.
func (p *Projector) stop(ctx context.Context, tx sqldb.Applier, id, status, reason string, at int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET status = $1, status_reason = $2, updated_at = $3 WHERE id = $4`, status, reason, at, id); err != nil {
		return err
	}
	// In chunks, each statement's journal bounded (giveUpChunkSize), each a range of
	// webhook_deliveries_pending_by_subscription after the last id given up (migration 21): its
	// cost is the chunk, not every delivery still pending (giveUpStatement).
	statement := giveUpStatement(p.dialect, p.giveUpChunk)
	for last := ""; ; {
		rows, err := tx.Query(ctx, statement, strings.TrimSpace("given up: "+reason), at, id, last)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			var given string
			if err := rows.Scan(&given); err != nil {
				rows.Close()
				return fmt.Errorf("read given-up deliveries: %w", err)
			}
			n++
			// Any id of the chunk would do as where the next one starts: every id still pending
			// sorts after all of them in the database's order, whatever its collation; the
			// greatest (here by bytes, which agrees for delivery ids) skips the most.
			last = max(last, given)
		}
		err = rows.Err()
		if closeErr := rows.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return err
		}
		p.givenUp += n
		// A short chunk is the last: PostgreSQL's limit counts the rows locked, and passes over
		// one the dispatcher recorded meanwhile, no longer pending, for the next.
		if n < p.giveUpChunk {
			return nil
		}
	}
}

// giveUpStatement fails up to chunk pending deliveries of subscription $3 with ids after $4, with
// the reason $1 at $2, and returns their ids. Rows are locked in id order, as Dispatcher.record
// locks the deliveries it records: the two wait for each other on a delivery being sent, never
// deadlock. The walk of the subscription's pending ids holds whatever the statistics say
// (projector_plans_test.go). event_position > 0 holds for every delivery: it is the index's
// condition beside status (migration 21), which only this statement states.
func giveUpStatement(dialect sqldb.Dialect, chunk int) string {
	return fmt.Sprintf(`WITH locked AS (SELECT id FROM webhook_deliveries
			WHERE subscription_id = $3 AND status = 'pending' AND event_position > 0 AND id > $4 ORDER BY id LIMIT %d%s)
		UPDATE webhook_deliveries SET status = 'failed', last_error = $1, updated_at = $2
		WHERE id IN (SELECT id FROM locked)
		RETURNING id`, chunk, dialect.ForUpdate())
}
