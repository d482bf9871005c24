package webhooks

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// ErasedError is the error of a delivery given up because its person was erased.
const ErasedError = "erased"

// erasureLock is the first key of the PostgreSQL advisory locks that order an erasure's cleanup
// of the outbox (eraseDeliveries, exclusive) and the batches of a replay that carry personal
// values (replays.noneErasedSince, shared); the second, erasureLockOf, names the account. (Locks
// of two keys are apart from those of one, sqldb.InlineLock.) Two accounts may share a second
// key: they then wait for each other's erasures, a few milliseconds, and nothing else.
const erasureLock int32 = 0x65726173 // "eras"

// erasureLockOf is the second key of an account's erasure lock.
func erasureLockOf(accountID string) int32 {
	h := fnv.New32a()
	h.Write([]byte(accountID))
	return int32(h.Sum32())
}

// eraseDeliveries forgets an erased contact in the outbox (decisions.md "Erasure"): every
// delivery of one of the contact's events (its stream, and the events that name it: leads,
// submissions, bookings, payments) loses its body, and those still pending are given up, failed
// with error "erased". Deliveries already made are not recalled; the attempt log holds no body.
// The deliveries are found by their events' positions (webhook_deliveries_by_account), not their
// ids, which no index orders: an erasure read every delivery of the account.
func eraseDeliveries(ctx context.Context, tx sqldb.Execer, dialect sqldb.Dialect, r domain.Recorded) error {
	e, err := r.Decode()
	if err != nil {
		return fmt.Errorf("webhooks: decode %s at %d: %w", r.Type, r.Position, err)
	}
	erased := e.(domain.ContactErased)
	now := time.Now().UnixMilli()
	if dialect == sqldb.Postgres {
		// Before the UPDATE looks for the deliveries: a replay's batch that read the person's
		// values before the erasure and has yet to commit holds the lock, and the UPDATE finds its
		// rows once it committed (replays.noneErasedSince). Released at commit.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, erasureLock, erasureLockOf(erased.AccountID)); err != nil {
			return fmt.Errorf("webhooks: lock erasure of contact %s: %w", erased.ContactID, err)
		}
	}
	// Locked in id order, as Dispatcher.record locks the deliveries it records (no deadlock).
	if _, err := tx.ExecContext(ctx, `WITH locked AS (SELECT id FROM webhook_deliveries
			WHERE account_id = $3 AND event_position IN (SELECT position FROM events WHERE account_id = $3 AND (stream_id = $4 OR contact_id = $4))
			ORDER BY id`+dialect.ForUpdate()+`)
		UPDATE webhook_deliveries SET body = '', body_sealed = 0,
			last_error = CASE WHEN status = 'pending' THEN $1 ELSE last_error END,
			status = CASE WHEN status = 'pending' THEN 'failed' ELSE status END,
			updated_at = $2
		WHERE id IN (SELECT id FROM locked)`,
		ErasedError, now, erased.AccountID, erased.ContactID); err != nil {
		return fmt.Errorf("webhooks: forget erased contact %s: %w", erased.ContactID, err)
	}
	return nil
}

// WaitErasedSends blocks until no delivery of an erased contact's events is claimed by any
// dispatcher, or ctx ends. The erasure gave up the pending ones; one a dispatcher had claimed
// before may be in flight, its body in that dispatcher's memory. A claim ends when its attempt
// is recorded (the record releases a delivery given up meanwhile: endedWhileSending) or when it
// lapses, and an attempt ends before its claim does (leaseMargin); so once none is claimed, no
// attempt carrying the person's data is in flight or can start (the claim reads each delivery's
// status again once it is committed, and a delivery given up by then is not sent:
// attachSubscriptions). At most a lease (Config.Timeout + 5 s) when a receiver hangs;
// nothing in the usual case.
func (d *Dispatcher) WaitErasedSends(ctx context.Context, accountID, contactID string) error {
	for {
		var claimed int
		if err := d.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries
			WHERE account_id = $1 AND claimed_until > `+d.db.Dialect.NowMillis()+`
			  AND event_position IN (SELECT position FROM events WHERE account_id = $1 AND (stream_id = $2 OR contact_id = $2))`,
			accountID, contactID).Scan(&claimed); err != nil {
			return fmt.Errorf("webhooks: deliveries of erased contact %s in flight: %w", contactID, err)
		}
		if claimed == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("webhooks: deliveries of erased contact %s in flight: %w", contactID, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
