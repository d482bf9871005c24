package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// Deliveries is the delivery log of the operator API.
type Deliveries struct {
	db   *sqldb.DB
	now  func() time.Time
	wake func()
}

// NewDeliveries reads and retries deliveries in db; now is the clock of the retry schedule
// (Dispatcher.Now), which a manual retry is stamped with, as the dispatcher finds deliveries due
// by it (claims it checks against the database's clock, as the dispatcher leases them); wake
// tells the dispatcher a delivery is due.
func NewDeliveries(db *sqldb.DB, now func() time.Time, wake func()) *Deliveries {
	return &Deliveries{db: db, now: now, wake: wake}
}

// Delivery is one event sent to one subscription, with every attempt.
type Delivery struct {
	ID            string
	AccountID     string
	EventID       string
	EventType     string
	WebhookID     string
	Status        string // pending, succeeded, failed
	NextAttemptAt time.Time
	LastError     string
	CreatedAt     time.Time
	Attempts      []Attempt
	position      int64
}

// Attempt is one try to send a delivery.
type Attempt struct {
	At         time.Time
	StatusCode int // 0: no answer
	Error      string
	DurationMs int64
}

// DeliveryFilter narrows the delivery log.
type DeliveryFilter struct {
	WebhookID string
	Status    string
}

type deliveryCursor struct {
	Position int64  `json:"p"`
	ID       string `json:"i"`
}

const selectDeliveries = `SELECT id, account_id, event_id, event_type, subscription_id, status, next_attempt_at, last_error, created_at, event_position FROM webhook_deliveries`

// List returns one page of an account's deliveries, in the order of their events.
func (d *Deliveries) List(ctx context.Context, accountID string, f DeliveryFilter, page paging.Page) ([]Delivery, string, error) {
	var sb strings.Builder
	sb.WriteString(selectDeliveries + ` WHERE account_id = $1`)
	args := []any{accountID}
	add := func(clause string, v ...any) {
		args = append(args, v...)
		sb.WriteString(" AND " + clause)
	}
	if f.WebhookID != "" {
		add(fmt.Sprintf("subscription_id = $%d", len(args)+1), f.WebhookID)
	}
	if f.Status != "" {
		add(fmt.Sprintf("status = $%d", len(args)+1), f.Status)
	}
	if page.Cursor != "" {
		var c deliveryCursor
		if err := paging.DecodeCursor(page.Cursor, &c); err != nil {
			return nil, "", err
		}
		n := len(args)
		add(fmt.Sprintf("(event_position > $%d OR (event_position = $%d AND id > $%d))", n+1, n+1, n+2), c.Position, c.ID)
	}
	fmt.Fprintf(&sb, " ORDER BY event_position, id LIMIT %d", sqldb.TextLimit(page.Limit+1))
	out, err := d.query(ctx, sb.String(), args...)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > page.Limit {
		out = out[:page.Limit]
		last := out[len(out)-1]
		next = paging.EncodeCursor(deliveryCursor{Position: last.position, ID: last.ID})
	}
	return out, next, d.attachAttempts(ctx, out)
}

// get returns one delivery of any account, with its attempts (Retry checks the account).
func (d *Deliveries) get(ctx context.Context, id string) (Delivery, error) {
	out, err := d.query(ctx, selectDeliveries+` WHERE id = $1`, id)
	if err != nil {
		return Delivery{}, err
	}
	if len(out) == 0 {
		return Delivery{}, ErrNotFound
	}
	return out[0], d.attachAttempts(ctx, out)
}

// Retry sends a delivery again now, with the same ids and body, whatever its state: a given-up
// delivery gets one more attempt, a pending one is brought forward and keeps its remaining
// attempts. A delivery whose subscription has ended, or that is being sent right now, is refused,
// and so is one recorded without a body because the secret its payload carries could not be
// opened (Projector.deliveriesOf): sent again, it would go without it; and one whose contact was
// erased, whose body the erasure dropped (eraseDeliveries).
func (d *Deliveries) Retry(ctx context.Context, accountID, id string) (Delivery, error) {
	del, err := d.get(ctx, id)
	if err != nil {
		return Delivery{}, err
	}
	if del.AccountID != accountID {
		return Delivery{}, domain.Forbidden("delivery belongs to another account")
	}
	var subStatus string
	if err := d.db.Read.QueryRowContext(ctx, `SELECT status FROM webhook_subscriptions WHERE id = $1`, del.WebhookID).Scan(&subStatus); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Delivery{}, fmt.Errorf("webhooks: read subscription: %w", err)
	}
	if subStatus != "active" {
		return Delivery{}, domain.Conflict("the webhook of this delivery is %s", subStatus)
	}
	var bodiless int
	if err := d.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE id = $1 AND body = ''`, id).Scan(&bodiless); err != nil {
		return Delivery{}, fmt.Errorf("webhooks: read delivery: %w", err)
	}
	if bodiless > 0 {
		// Two things leave a delivery without a body: a payload whose secret could not be opened
		// when it was recorded (Projector.deliveriesOf: its lastError says why, "not sent: …"),
		// and the erasure of its contact (eraseDeliveries), which drops the body of every
		// delivery, made or not, and leaves a delivery made before it with no error to quote.
		if reason, recorded := strings.CutPrefix(del.LastError, "not sent: "); recorded {
			return Delivery{}, domain.Conflict("the delivery was recorded without a body and cannot be sent: %s", reason)
		}
		return Delivery{}, domain.Conflict("the delivery's contact was erased: its body was dropped and it cannot be sent")
	}
	// The schedule's clock: a retry stamped by another would be due only once the dispatcher's
	// clock reached it. A claim is held by the database's (claimWalk).
	now := d.now().UnixMilli()
	// One more attempt for a delivery that was given up; a pending one keeps the rest of its
	// schedule and is only brought forward.
	res, err := d.db.Write.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $1,
		max_attempts = CASE WHEN max_attempts > attempts THEN max_attempts ELSE attempts + 1 END, updated_at = $1
		WHERE id = $2 AND claimed_until < `+d.db.Dialect.NowMillis(), now, id)
	if err != nil {
		return Delivery{}, fmt.Errorf("webhooks: retry delivery: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Delivery{}, domain.Conflict("the delivery is being sent right now")
	}
	d.wake()
	// Answer with the delivery as this retry left it: re-reading would race the dispatcher, which
	// may already have sent it.
	del.Status, del.NextAttemptAt = "pending", time.UnixMilli(now).UTC()
	return del, nil
}

func (d *Deliveries) query(ctx context.Context, q string, args ...any) ([]Delivery, error) {
	rows, err := d.db.Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("webhooks: query deliveries: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var del Delivery
		var next, created int64
		if err := rows.Scan(&del.ID, &del.AccountID, &del.EventID, &del.EventType, &del.WebhookID, &del.Status, &next, &del.LastError, &created, &del.position); err != nil {
			return nil, fmt.Errorf("webhooks: scan delivery: %w", err)
		}
		del.NextAttemptAt, del.CreatedAt = time.UnixMilli(next).UTC(), time.UnixMilli(created).UTC()
		del.Attempts = []Attempt{}
		out = append(out, del)
	}
	return out, rows.Err()
}

func (d *Deliveries) attachAttempts(ctx context.Context, out []Delivery) error {
	if len(out) == 0 {
		return nil
	}
	index := map[string]int{}
	ids := make([]string, len(out))
	for i, del := range out {
		index[del.ID] = i
		ids[i] = del.ID
	}
	anyOf, args := sqldb.AnyOf(d.db.Dialect, "delivery_id", 1, ids)
	rows, err := sqldb.Query(ctx, d.db.Read, `SELECT delivery_id, at, status_code, error, duration_ms FROM webhook_attempts WHERE `+anyOf+` ORDER BY delivery_id, attempt`, args...)
	if err != nil {
		return fmt.Errorf("webhooks: query attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var a Attempt
		var at int64
		if err := rows.Scan(&id, &at, &a.StatusCode, &a.Error, &a.DurationMs); err != nil {
			return fmt.Errorf("webhooks: scan attempt: %w", err)
		}
		a.At = time.UnixMilli(at).UTC()
		out[index[id]].Attempts = append(out[index[id]].Attempts, a)
	}
	return rows.Err()
}

// Backlog counts the deliveries still to be sent (a metric).
func (d *Deliveries) Backlog(ctx context.Context) (int64, error) {
	var n int64
	err := d.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n)
	return n, err
}
