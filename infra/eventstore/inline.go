package eventstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// InlineProjection is a read model that the store applies inside the transaction that appends its
// events, moving its checkpoint there too (an inline projection, as Marten calls it): once an
// append is answered, the read model shows it, without waiting for the relay. The contacts and
// leads a write creates are read back at once by its client; the relay applies the others.
//
// How DESIGN.md's invariants hold without a lock between appends:
//   - every event once: each append applies its own events, in its own transaction, so the read
//     model holds exactly the committed events; a rolled-back append takes its read-model change
//     with it. The checkpoint does not move with each append (it would be one row every append
//     writes, a lock again): its flag "inline" says that appends apply the projection, and its
//     position is where the last catch-up brought it;
//   - order: a read-model row changes with the events of one stream only (a contact's, a
//     lead's), and appends to one stream are ordered by the unique (stream_id, version): a second
//     append to a stream waits for the first's commit and then fails. So each row sees its events
//     in position order whatever else commits side by side;
//   - catch-up: a checkpoint without the flag (a projection that was relayed before, or new)
//     is brought up to the end of the log once, by CatchUpInline, under sqldb.InlineLock held
//     exclusively: no append is running then, and every append after it applies the projection;
//   - rebuilds: the swap holds the same lock exclusively (pipeline/rebuild.go), so it meets the
//     live rows at one point of the log, with no append half done;
//   - the price: a projection that fails fails the append it rides with (the write answers an
//     error and nothing is written), and every process that appends must apply the inline
//     projections (service.InlineProjections).
type InlineProjection interface {
	// Name identifies the projection's checkpoint.
	Name() string
	// Handles tells whether ApplyIn does anything with events of a type.
	Handles(eventType string) bool
	// ApplyIn applies events, in position order, through tx.
	ApplyIn(ctx context.Context, tx sqldb.Applier, events []domain.Recorded) error
}

// SetInline makes ps the store's inline projections; call it before the first append. They are
// then no read models of the relay's: nothing else may apply them.
func (s *Store) SetInline(ps ...InlineProjection) { s.inline = ps }

// InlineHandles tells whether an inline projection applies events of a type.
func (s *Store) InlineHandles(eventType string) bool {
	for _, p := range s.inline {
		if p.Handles(eventType) {
			return true
		}
	}
	return false
}

// CatchUpInline brings each inline projection whose checkpoint is not flagged inline yet up to
// the end of the log and flags it, once per store: at start, so that reads are current before
// this process has written anything, and before the first append otherwise.
//
// It also refuses a store that lacks a projection other processes apply inline: its appends
// would leave that read model without their events. A store without inline projections checks
// this at its first append.
func (s *Store) CatchUpInline(ctx context.Context) error {
	if s.inlineReady.Load() {
		return nil
	}
	s.inlineMu.Lock()
	defer s.inlineMu.Unlock()
	if s.inlineReady.Load() {
		return nil
	}
	if err := s.settleRestored(ctx); err != nil {
		return err
	}
	if err := s.checkInlineFlags(ctx); err != nil {
		return err
	}
	if len(s.inline) == 0 {
		s.inlineReady.Store(true)
		return nil
	}
	end, err := s.catchUpInlineTx(ctx)
	if err != nil {
		return err
	}
	s.inlineReady.Store(true)
	s.reportInline(end)
	return nil
}

// checkInlineFlags fails when a checkpoint is flagged inline for a projection this store does not
// apply.
func (s *Store) checkInlineFlags(ctx context.Context) error {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT name FROM projection_checkpoints WHERE inline = 1`)
	if err != nil {
		return fmt.Errorf("eventstore: read inline checkpoints: %w", err)
	}
	defer rows.Close()
	var missing []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("eventstore: read inline checkpoints: %w", err)
		}
		if !slices.Contains(s.inlineNames(), name) {
			missing = append(missing, name)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("eventstore: read inline checkpoints: %w", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("eventstore: appends apply %s inline, and this store does not: it may not append (service.InlineProjections)", strings.Join(missing, ", "))
	}
	return nil
}

// catchUpInlineTx runs the catch-up in one transaction that no append runs beside, and returns
// the end of the log it reached.
func (s *Store) catchUpInlineTx(ctx context.Context) (int64, error) {
	var tx *sql.Tx
	var err error
	release := func() {}
	if s.db.Dialect == sqldb.Postgres {
		if tx, err = s.db.Write.BeginTx(ctx, nil); err == nil {
			if _, err = tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, sqldb.InlineLock); err != nil {
				tx.Rollback()
			}
		}
	} else {
		tx, release, err = s.db.BeginAppendTx(ctx)
	}
	if err != nil {
		return 0, fmt.Errorf("eventstore: begin inline catch-up: %w", err)
	}
	defer release()
	defer tx.Rollback()
	// No append runs: every event is committed, and the statement's snapshot sees them all.
	var end int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&end); err != nil {
		return 0, fmt.Errorf("eventstore: end of the log: %w", err)
	}
	for _, p := range s.inline {
		var from int64
		var inline int
		err := tx.QueryRowContext(ctx, `SELECT position, inline FROM projection_checkpoints WHERE name = $1`, p.Name()).Scan(&from, &inline)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("eventstore: checkpoint of %s: %w", p.Name(), err)
		}
		if inline == 1 {
			continue
		}
		if err := s.applyLog(ctx, tx, p, from, end); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO projection_checkpoints (name, position, updated_at, inline) VALUES ($1, $2, $3, 1)
			ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at, inline = 1`, p.Name(), end, time.Now().UnixMilli()); err != nil {
			return 0, fmt.Errorf("eventstore: flag %s inline: %w", p.Name(), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("eventstore: commit inline catch-up: %w", err)
	}
	return end, nil
}

// applyLog applies the log in (from, end] to p inside tx, a chunk at a time.
func (s *Store) applyLog(ctx context.Context, tx *sql.Tx, p InlineProjection, from, end int64) error {
	for pos := from; pos < end; {
		rows, err := tx.QueryContext(ctx, readLog, pos, catchUpChunk)
		if err != nil {
			return fmt.Errorf("eventstore: read log after %d: %w", pos, err)
		}
		events, err := s.scanOpened(ctx, rows)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return nil
		}
		if err := applyTo(ctx, sqldb.ApplierOf(tx), p, events); err != nil {
			return err
		}
		pos = events[len(events)-1].Position
	}
	return nil
}

// InlineObserver is an Observer that is also told how far the inline projections are (metrics,
// as the relay's projections report it).
type InlineObserver interface {
	Applied(projection string, position int64, lastOccurred time.Time)
}

// reportInline tells an InlineObserver the position a committed batch moved the inline
// projections to.
func (s *Store) reportInline(pos int64) {
	o, ok := s.observer.(InlineObserver)
	if !ok {
		return
	}
	now := s.now()
	for _, p := range s.inline {
		o.Applied(p.Name(), pos, now)
	}
}

// catchUpChunk is how many events of the log a catch-up reads at a time.
const catchUpChunk = 1000

func (s *Store) inlineNames() []string {
	names := make([]string, len(s.inline))
	for i, p := range s.inline {
		names[i] = p.Name()
	}
	return names
}

// applyInline applies the rows an append writes to every inline projection.
func (s *Store) applyInline(ctx context.Context, tx appendTx, rows []*row) error {
	if len(s.inline) == 0 || len(rows) == 0 {
		return nil
	}
	events := make([]domain.Recorded, len(rows))
	for i, r := range rows {
		events[i] = r.recorded()
	}
	for _, p := range s.inline {
		if err := applyTo(ctx, tx, p, events); err != nil {
			return err
		}
	}
	return nil
}

// applyTo gives p the events of a batch it handles, if any.
func applyTo(ctx context.Context, tx sqldb.Applier, p InlineProjection, events []domain.Recorded) error {
	var mine []domain.Recorded
	for _, e := range events {
		if p.Handles(e.Type) {
			mine = append(mine, e)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	if err := p.ApplyIn(ctx, tx, mine); err != nil {
		return fmt.Errorf("eventstore: inline projection %s: %w", p.Name(), err)
	}
	return nil
}

// recorded is the row as a reader of the log gets it.
func (r *row) recorded() domain.Recorded {
	return domain.Recorded{
		Position: r.position, ID: r.eventID, StreamID: r.streamID, Version: r.version, Type: r.eventType,
		SchemaVersion: r.schemaVersion, OccurredAt: time.UnixMilli(r.occurredAt).UTC(),
		Data: json.RawMessage(r.plain), Metadata: *r.meta,
	}
}
