package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// projector runs one projection: it applies batches of the log exactly once and in order, moving
// the projection's checkpoint in the same transaction as the read-model change.
//
// It keeps two positions: applied, how far the read model reflects the log, and stored, the
// checkpoint as this projector last wrote it. They differ after batches the projection has
// nothing to do with: those move applied without a transaction, and the checkpoint catches up
// with the next real change, or when the pipeline's saver writes it in the background (off the
// relay's path, so that no handler stalls the others). Replaying such a stretch after a restart
// would be harmless anyway: it holds nothing the projection applies.
type projector struct {
	projection Projection
	db         *sqldb.DB
	log        LogReader
	tracker    *Tracker
	observer   Observer

	applied     int64
	stored      int64
	initialized bool
	// reached publishes applied to the checkpoint saver, which runs on another goroutine; saved
	// is what the saver wrote last, so that it writes only when the projection moved.
	reached atomic.Int64
	saved   atomic.Int64
	// active: this process runs the projection now (the pipeline's saver writes only those).
	active atomic.Bool
}

// catchUpChunk is how many missing events a projector reads from the log at a time.
const catchUpChunk = 1000

// checkpoint loads the projection's position, creating its checkpoint at 0 the first time.
func (p *projector) checkpoint(ctx context.Context) (int64, error) {
	name := p.projection.Name()
	if _, err := p.db.Projections.ExecContext(ctx, `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, 0, $2) ON CONFLICT (name) DO NOTHING`,
		name, time.Now().UnixMilli()); err != nil {
		return 0, fmt.Errorf("pipeline: create checkpoint %s: %w", name, err)
	}
	var pos int64
	if err := p.db.Projections.QueryRowContext(ctx, `SELECT position FROM projection_checkpoints WHERE name = $1`, name).Scan(&pos); err != nil {
		return 0, fmt.Errorf("pipeline: read checkpoint %s: %w", name, err)
	}
	p.applied, p.stored, p.initialized = pos, pos, true
	p.reached.Store(pos)
	p.saved.Store(pos)
	return pos, nil
}

// apply brings the projection up to the end of batch, which stands for the log after position
// after. Events at or below the checkpoint were applied before (a redelivery, or another process
// got there first) and are skipped; events between the checkpoint and the batch are read from the
// log first, so nothing is ever skipped whatever the transport delivers. Positions are not dense
// (a rolled-back append leaves a gap): what lies between two events is what the log holds there.
func (p *projector) apply(ctx context.Context, after int64, batch []domain.Recorded) error {
	if !p.initialized {
		if _, err := p.checkpoint(ctx); err != nil {
			return err
		}
	}
	for after > p.applied {
		// A relay read through after: the stretch is settled.
		missing, err := p.log.ReadSettled(ctx, p.applied, after, catchUpChunk)
		if err != nil {
			return fmt.Errorf("pipeline: %s: catch up: %w", p.projection.Name(), err)
		}
		if len(missing) == 0 {
			p.applied = after // nothing committed in between: the batch follows on
			break
		}
		if err := p.applyContiguous(ctx, missing); err != nil {
			return err
		}
	}
	if fresh := domain.After(batch, p.applied); len(fresh) > 0 {
		if err := p.applyContiguous(ctx, fresh); err != nil {
			return err
		}
	}
	p.reached.Store(p.applied)
	p.tracker.advance(p.projection.Name(), p.applied)
	return nil
}

// skip moves the projection past a batch (the log after position after) that holds nothing it
// handles, as apply would, and tells whether it did. It does not when the batch holds an event
// the projection handles, or when the batch does not start where the projection is (the log is
// read then, by apply). The relay calls it only while no message of the projection is in flight.
func (p *projector) skip(after int64, batch []domain.Recorded) bool {
	fresh := domain.After(batch, p.applied)
	if !p.initialized || after > p.applied || p.handlesAny(fresh) {
		return false
	}
	if len(fresh) > 0 {
		p.applied = fresh[len(fresh)-1].Position
	}
	p.reached.Store(p.applied)
	p.tracker.advance(p.projection.Name(), p.applied)
	return true
}

// applyContiguous applies events that follow p.applied in the log, with nothing between.
func (p *projector) applyContiguous(ctx context.Context, events []domain.Recorded) error {
	last := events[len(events)-1]
	if !p.handlesAny(events) {
		p.applied = last.Position
		return nil
	}
	return p.write(ctx, events)
}

func (p *projector) handlesAny(events []domain.Recorded) bool {
	for _, e := range events {
		if p.projection.Handles(e.Type) {
			return true
		}
	}
	return false
}

// write applies events and moves the checkpoint past them in one transaction. The checkpoint
// moves only from the value this projector stored last; when it moved meanwhile (another
// process, or the saver), the events already applied are left out. On PostgreSQL a projection
// that applies through any sqldb.Applier is written in a pipelined transaction (writePipelined),
// and in this one only when its checkpoint moved meanwhile.
func (p *projector) write(ctx context.Context, events []domain.Recorded) error {
	if pr, ok := p.projection.(appliesIn); ok && p.db.Dialect == sqldb.Postgres {
		err := p.writePipelined(ctx, pr, events)
		if !errors.Is(err, errCheckpointMoved) {
			return err
		}
	}
	name := p.projection.Name()
	target := events[len(events)-1].Position
	tx, release, err := p.db.BeginDerivedTx(ctx)
	if err != nil {
		return fmt.Errorf("pipeline: %s: begin: %w", name, err)
	}
	defer release()
	defer tx.Rollback()
	now := time.Now()
	res, err := tx.ExecContext(ctx, `UPDATE projection_checkpoints SET position = $1, updated_at = $2 WHERE name = $3 AND position = $4`,
		target, now.UnixMilli(), name, p.stored)
	if err != nil {
		return fmt.Errorf("pipeline: %s: move checkpoint: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if events, err = p.afterConcurrentProjector(ctx, tx, events, target, now); err != nil {
			return err
		}
	}
	if len(events) > 0 {
		if err := p.applyIn(ctx, tx, events); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("pipeline: %s: commit: %w", name, err)
	}
	p.wrote(target, events)
	return nil
}

// applyIn applies events in tx: through an Applier of the database (on SQLite it lends its kept
// statements) when the projection takes one, else through Apply.
func (p *projector) applyIn(ctx context.Context, tx *sql.Tx, events []domain.Recorded) error {
	if pr, ok := p.projection.(appliesIn); ok {
		return pr.ApplyIn(ctx, p.db.Applier(tx), events)
	}
	return p.projection.Apply(ctx, tx, events)
}

// wrote records a committed write of events through target.
func (p *projector) wrote(target int64, events []domain.Recorded) {
	p.stored = max(target, p.stored)
	p.applied = max(p.applied, target, p.stored)
	if len(events) > 0 {
		p.observer.Applied(p.projection.Name(), target, events[len(events)-1].OccurredAt)
		if c, ok := p.projection.(committer); ok {
			c.Committed()
		}
	}
}

// appliesIn is a projection that applies a batch through any sqldb.Applier (the read models of
// package projections, the webhook projector), so through a PipelinedTx too.
type appliesIn interface {
	ApplyIn(ctx context.Context, tx sqldb.Applier, batch []domain.Recorded) error
}

// pgMoveCheckpoint moves a projection's checkpoint on from where this projector left it, and
// fails with a division by zero when it is no longer there. It travels in one batch with the
// projection's writes and the COMMIT, sent before any answer is read, so a checkpoint moved
// meanwhile must abort the transaction rather than report no row changed. Where this projector
// left it is anywhere from what it stored ($4) to what it applied ($5): the saver moves the
// checkpoint within that stretch, through batches the projection had nothing to do with, and
// every event of the batch lies after it.
const pgMoveCheckpoint = `WITH moved AS (UPDATE projection_checkpoints SET position = $1, updated_at = $2 WHERE name = $3 AND position BETWEEN $4 AND $5 RETURNING 1)
	SELECT 1 / COUNT(*) FROM moved`

// errCheckpointMoved: another process, or the saver, moved the checkpoint since this projector
// stored it; the pipelined transaction rolled back, and write sorts out what is left to apply.
var errCheckpointMoved = errors.New("pipeline: the checkpoint moved meanwhile")

// writePipelined is write on PostgreSQL for a projection that appliesIn: BEGIN, the checkpoint's
// move, the projection's writes and COMMIT go in one round trip (PipelinedTx), plus one for each
// read the projection makes, where a database/sql transaction took four or five (BEGIN, the
// move, each statement, COMMIT). Relayed read models and webhooks then lag the log by that much
// less, and the database and the service spend less CPU per batch.
func (p *projector) writePipelined(ctx context.Context, pr appliesIn, events []domain.Recorded) error {
	name := p.projection.Name()
	target := events[len(events)-1].Position
	err := sqldb.WriteTx(ctx, sqldb.Postgres, p.db.Projections, func(tx sqldb.Applier) error {
		if _, err := tx.ExecContext(ctx, pgMoveCheckpoint, target, time.Now().UnixMilli(), name, p.stored, p.applied); err != nil {
			return err
		}
		return pr.ApplyIn(ctx, tx, events)
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "22012": // division_by_zero: pgMoveCheckpoint
		return errCheckpointMoved
	case err != nil:
		return fmt.Errorf("pipeline: %s: %w", name, err)
	}
	p.wrote(target, events)
	return nil
}

// afterConcurrentProjector handles a checkpoint that another process moved: it locks the
// checkpoint, drops the events that process already applied, and moves the checkpoint on.
func (p *projector) afterConcurrentProjector(ctx context.Context, tx *sql.Tx, events []domain.Recorded, target int64, now time.Time) ([]domain.Recorded, error) {
	name := p.projection.Name()
	var theirs int64
	if err := tx.QueryRowContext(ctx, `SELECT position FROM projection_checkpoints WHERE name = $1`+p.db.ForUpdate(), name).Scan(&theirs); err != nil {
		return nil, fmt.Errorf("pipeline: %s: lock checkpoint: %w", name, err)
	}
	p.stored = theirs
	if o, ok := p.observer.(interface{ AppliedElsewhere(projection string) }); ok && theirs > p.applied {
		o.AppliedElsewhere(name)
	}
	events = domain.After(events, theirs)
	if theirs >= target {
		return nil, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE projection_checkpoints SET position = $1, updated_at = $2 WHERE name = $3`, target, now.UnixMilli(), name); err != nil {
		return nil, fmt.Errorf("pipeline: %s: move checkpoint: %w", name, err)
	}
	return events, nil
}

// committer is a projection that wants to know when its changes are committed (the webhook
// projector wakes its dispatcher).
type committer interface{ Committed() }

// saveCheckpoint writes how far the projection got through batches it had nothing to do with.
// It runs beside the handler, so it only ever moves the checkpoint forward: the handler's next
// write then finds the checkpoint moved and goes on from there.
func (p *projector) saveCheckpoint(ctx context.Context) error {
	pos := p.reached.Load()
	if pos <= p.saved.Load() {
		return nil
	}
	_, err := p.db.Projections.ExecContext(ctx, `UPDATE projection_checkpoints SET position = $1, updated_at = $2 WHERE name = $3 AND position < $1`,
		pos, time.Now().UnixMilli(), p.projection.Name())
	if err != nil {
		return fmt.Errorf("pipeline: %s: save checkpoint: %w", p.projection.Name(), err)
	}
	p.saved.Store(pos)
	return nil
}
