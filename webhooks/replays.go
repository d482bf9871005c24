package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// A replay is recorded in batches (SelfService.Replay), each its own short transaction that
// writes the batch's deliveries and moves the replay's row of webhook_replays on (up_to, the log
// position recorded up to, and delivery_count) together: a write transaction is never held for
// the whole window, and a replay cut short is resumed from its row.
//
// Whoever records a replay holds a claim on its row: claimed_by (an id of the attempt) and
// claimed_until, renewed by every batch. A batch commits only while its recorder still holds the
// claim, so two recorders never both go on. A row left 'recording' whose claim ran out (its
// process stopped, or lost the database) is taken over: by the worker that holds the
// "webhook-replays" lease (ResumeReplays, every few seconds), or by a retry of the request with
// the same Idempotency-Key. The claim is judged by the clock of the processes (the service's
// Now): clocks that disagree by less than ReplayClaim are harmless, since the claim only decides
// who goes on, and the deliveries' ids decide that nothing is recorded twice.

// ReplayClaim is how long a replay's recorder holds it without committing a batch (a batch
// takes milliseconds): the delay before a replay cut short is resumed.
const ReplayClaim = 30 * time.Second

// States of a replay.
const (
	replayRecording = "recording"
	replayRecorded  = "recorded"
)

// errReplayTakenOver is a batch that did not commit because another recorder took the replay
// over (this one was slower than ReplayClaim between two batches).
var errReplayTakenOver = errors.New("webhooks: the replay was taken over by another recorder")

// replayRow is a row of webhook_replays.
type replayRow struct {
	id, accountID, subscriptionID string
	since, until                  time.Time // until zero: no end
	types                         []string  // outbound types asked for; none: every type
	idempotencyID                 string
	upTo                          int64 // the log position recorded up to
	count                         int   // deliveries recorded so far
	state                         string
}

// replays is the webhook_replays table.
type replays struct {
	db *sqldb.DB
}

const selectReplays = `SELECT id, account_id, subscription_id, since_at, until_at, types, COALESCE(idempotency_id, ''), up_to, delivery_count, state FROM webhook_replays`

// create records a new replay, claimed by holder until claimedUntil. When a replay of the same
// Idempotency-Key claim exists already, it records nothing and returns that one (created false).
func (r replays) create(ctx context.Context, row replayRow, holder string, now, claimedUntil int64) (replayRow, bool, error) {
	types, err := json.Marshal(append([]string{}, row.types...))
	if err != nil {
		return replayRow{}, false, err
	}
	var idem any
	if row.idempotencyID != "" {
		idem = row.idempotencyID
	}
	var until int64
	if !row.until.IsZero() {
		until = row.until.UnixMilli()
	}
	res, err := r.db.Write.ExecContext(ctx, `INSERT INTO webhook_replays (id, account_id, subscription_id, since_at, until_at, types, idempotency_id,
		up_to, delivery_count, state, claimed_by, claimed_until, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 0, 0, $8, $9, $10, $11, $11) ON CONFLICT DO NOTHING`,
		row.id, row.accountID, row.subscriptionID, row.since.UnixMilli(), until, string(types), idem, replayRecording, holder, claimedUntil, now)
	if err != nil {
		return replayRow{}, false, fmt.Errorf("webhooks: record a replay: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return replayRow{}, false, err
	} else if n == 1 {
		row.state = replayRecording
		return row, true, nil
	}
	earlier, found, err := r.ofRequest(ctx, row.idempotencyID)
	if err == nil && !found {
		err = fmt.Errorf("webhooks: replay %s was not recorded, and no replay has its Idempotency-Key", row.id)
	}
	return earlier, false, err
}

// ofRequest returns the replay asked for by the request of an Idempotency-Key claim, if any.
func (r replays) ofRequest(ctx context.Context, idempotencyID string) (replayRow, bool, error) {
	if idempotencyID == "" {
		return replayRow{}, false, nil
	}
	return r.one(ctx, selectReplays+` WHERE idempotency_id = $1`, idempotencyID)
}

// get returns a replay.
func (r replays) get(ctx context.Context, id string) (replayRow, error) {
	row, found, err := r.one(ctx, selectReplays+` WHERE id = $1`, id)
	if err == nil && !found {
		err = fmt.Errorf("webhooks: replay %s not found", id)
	}
	return row, err
}

func (r replays) one(ctx context.Context, query string, args ...any) (replayRow, bool, error) {
	var row replayRow
	var since, until int64
	var types string
	// The writer's pool: a replay just claimed or moved on is read as it is now, also on SQLite.
	err := r.db.Write.QueryRowContext(ctx, query, args...).Scan(&row.id, &row.accountID, &row.subscriptionID, &since, &until, &types,
		&row.idempotencyID, &row.upTo, &row.count, &row.state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return replayRow{}, false, nil
	case err != nil:
		return replayRow{}, false, fmt.Errorf("webhooks: read a replay: %w", err)
	}
	row.since = time.UnixMilli(since)
	if until != 0 {
		row.until = time.UnixMilli(until)
	}
	if err := json.Unmarshal([]byte(types), &row.types); err != nil {
		return replayRow{}, false, fmt.Errorf("webhooks: read the types of replay %s: %w", row.id, err)
	}
	return row, true, nil
}

// claim takes a replay still being recorded whose claim ran out, for holder until claimedUntil;
// false when it is recorded, or another recorder holds it.
func (r replays) claim(ctx context.Context, id, holder string, now, claimedUntil int64) (bool, error) {
	res, err := r.db.Write.ExecContext(ctx, `UPDATE webhook_replays SET claimed_by = $1, claimed_until = $2, updated_at = $3
		WHERE id = $4 AND state = $5 AND claimed_until <= $3`, holder, claimedUntil, now, id, replayRecording)
	if err != nil {
		return false, fmt.Errorf("webhooks: claim replay %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// unclaimed returns up to limit replays still being recorded whose claim ran out, oldest first.
func (r replays) unclaimed(ctx context.Context, now int64, limit int) ([]string, error) {
	rows, err := r.db.Write.QueryContext(ctx, `SELECT id FROM webhook_replays WHERE state = $1 AND claimed_until <= $2
		ORDER BY claimed_until, id LIMIT $3`, replayRecording, now, limit)
	if err != nil {
		return nil, fmt.Errorf("webhooks: find the replays to resume: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// batch is what one transaction of a replay records.
type batch struct {
	deliveries   [][]any // rows of webhook_deliveries
	upTo         int64   // the log position recorded up to, this batch included
	last         bool    // the replay is recorded once this batch is
	now          int64
	claimedUntil int64
	// accountID is the replay's account; persons are the contacts whose personal values the
	// deliveries may carry: those of their events not known to be erased when the page was read.
	accountID string
	persons   []string
}

// erasedSinceRead is a batch that did not commit because persons whose values it carries were
// erased since its page was read: the page is read again, their values now null.
type erasedSinceRead struct{ persons []string }

func (e erasedSinceRead) Error() string {
	return fmt.Sprintf("webhooks: %d persons of a replay's batch were erased since it was read", len(e.persons))
}

// errErasing is a batch that did not commit because, on PostgreSQL, the webhook projector is
// erasing a contact of the replay's account (it holds the account's erasure lock): the batch goes
// again in a moment.
var errErasing = errors.New("webhooks: an erasure of the replay's account is being applied")

// erasingWait is how long a batch that met errErasing waits before it goes again.
const erasingWait = 10 * time.Millisecond

// commit records a batch of a replay held by holder, in one transaction: its deliveries (one
// already recorded, by an earlier recorder, is left as it is) and the replay's progress. It
// returns errReplayTakenOver, recording nothing, when holder no longer holds the replay, and
// erasedSinceRead or errErasing, recording nothing, when it cannot tell that none of its persons
// was erased since its page was read (noneErasedSince).
func (r replays) commit(ctx context.Context, id, holder string, b batch) error {
	tx, err := r.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("webhooks: begin a batch of replay %s: %w", id, err)
	}
	defer tx.Rollback()
	state, claimedUntil := replayRecording, b.claimedUntil
	if b.last {
		state, claimedUntil = replayRecorded, 0
	}
	// The progress first: on PostgreSQL its row lock orders this batch after a takeover's claim.
	res, err := tx.ExecContext(ctx, `UPDATE webhook_replays SET up_to = $1, delivery_count = delivery_count + $2, state = $3, claimed_until = $4, updated_at = $5
		WHERE id = $6 AND claimed_by = $7 AND state = $8`, b.upTo, len(b.deliveries), state, claimedUntil, b.now, id, holder, replayRecording)
	if err != nil {
		return fmt.Errorf("webhooks: record the progress of replay %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errReplayTakenOver
	}
	if err := r.noneErasedSince(ctx, tx, b); err != nil {
		return err
	}
	if err := sqldb.ExecRows(ctx, tx, r.db.Dialect, `INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body, body_sealed,
			status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at) VALUES `,
		` ON CONFLICT (id) DO NOTHING`, b.deliveries); err != nil {
		return fmt.Errorf("webhooks: record replayed deliveries: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("webhooks: commit a batch of replay %s: %w", id, err)
	}
	return nil
}

// noneErasedSince checks, in a batch's transaction before it writes its deliveries, that none of
// the persons whose values the batch carries is erased (person_keys: the key destroyed). The
// page was read, its values opened, before this transaction; an erasure that committed since,
// and whose cleanup of the outbox (eraseDeliveries, in the webhook projector's transaction) ran
// before this batch commits, would not find the batch's rows, and would leave the person's values
// in them. So one of the two must see the other:
//
//   - SQLite: one writer. This transaction begins with the write lock (BEGIN IMMEDIATE), so it
//     runs wholly before or wholly after the erasure's append, whose cleanup comes after it.
//     Before: the cleanup finds and scrubs the rows committed here. After: the check below sees
//     the erasure.
//   - PostgreSQL, with the replay and the erasure in any processes: this transaction holds the
//     account's erasure lock, shared, from before the check until it commits, and the cleanup
//     takes it exclusively before it looks for deliveries (eraseDeliveries). If the cleanup
//     holds it first, a batch takes it only once the cleanup committed, after the erasure's
//     append: the check, a statement that starts after the lock is granted, sees the key
//     destroyed. Otherwise the cleanup waits until this transaction committed, and its
//     UPDATE, a statement that starts after that, finds and scrubs the rows. The lock is only
//     tried (errErasing when the cleanup holds it), never waited for: a cleanup applies several
//     erasures in one transaction, and waiting could deadlock with it.
//
// An erased person makes it return erasedSinceRead: the caller reads the page again, which opens
// nothing of them any more (the key is gone for every reader once its erasure committed).
func (r replays) noneErasedSince(ctx context.Context, tx *sql.Tx, b batch) error {
	if len(b.persons) == 0 {
		return nil
	}
	if r.db.Dialect == sqldb.Postgres {
		var locked bool
		if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock_shared($1, $2)`, erasureLock, erasureLockOf(b.accountID)).Scan(&locked); err != nil {
			return fmt.Errorf("webhooks: lock a replay's batch against erasures: %w", err)
		}
		if !locked {
			return errErasing
		}
	}
	query, args := eventstore.ErasedAmong(r.db.Dialect, b.persons)
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("webhooks: erasures of a replay's batch: %w", err)
	}
	defer rows.Close()
	var erased []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("webhooks: erasures of a replay's batch: %w", err)
		}
		erased = append(erased, id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("webhooks: erasures of a replay's batch: %w", err)
	}
	if len(erased) > 0 {
		return erasedSinceRead{persons: erased}
	}
	return nil
}

// newReplayHolder is the id of one attempt at recording a replay.
func newReplayHolder() string { return domain.NewID("rec") }

// ResumeReplays finishes the replays left unfinished whose claim ran out (their recorder
// stopped), each from where it was, and returns how many it finished. The worker that holds the
// "webhook-replays" lease calls it every few seconds (infra/service).
func (s *SelfService) ResumeReplays(ctx context.Context) (int, error) {
	ids, err := s.replays.unclaimed(ctx, s.clock().UnixMilli(), 100)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, id := range ids {
		holder := newReplayHolder()
		now := s.clock()
		if ok, err := s.replays.claim(ctx, id, holder, now.UnixMilli(), now.Add(ReplayClaim).UnixMilli()); err != nil {
			return done, err
		} else if !ok {
			continue // recorded, or taken by another, meanwhile
		}
		row, err := s.replays.get(ctx, id)
		if err != nil {
			return done, err
		}
		if _, err := s.record(ctx, row, holder); errors.Is(err, errReplayTakenOver) {
			continue
		} else if err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}
