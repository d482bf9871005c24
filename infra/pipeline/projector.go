package pipeline

import (
	"context"
	"fmt"
	"time"

	"funnel/domain"
	"funnel/infra/sqldb"
	"funnel/projections"
)

// projector runs one projection: it applies batches of the log exactly once and in order, moving
// the projection's checkpoint in the same transaction as the read-model change.
type projector struct {
	projection projections.Projection
	readModel  bool
	db         *sqldb.DB
	log        LogReader
	tracker    *Tracker
	observer   Observer
}

// catchUpChunk is how many missing events a projector reads from the log at a time.
const catchUpChunk = 1000

// checkpoint returns the projection's position, creating its checkpoint at 0 the first time.
func (p *projector) checkpoint(ctx context.Context) (int64, error) {
	name := p.projection.Name()
	if _, err := p.db.Write.ExecContext(ctx, `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, 0, $2) ON CONFLICT (name) DO NOTHING`,
		name, time.Now().UnixMilli()); err != nil {
		return 0, fmt.Errorf("pipeline: create checkpoint %s: %w", name, err)
	}
	var pos int64
	if err := p.db.Read.QueryRowContext(ctx, `SELECT position FROM projection_checkpoints WHERE name = $1`, name).Scan(&pos); err != nil {
		return 0, fmt.Errorf("pipeline: read checkpoint %s: %w", name, err)
	}
	return pos, nil
}

// apply brings the projection up to the end of batch. Events at or below the checkpoint were
// applied before (a redelivery, or another process got there first) and are skipped; events
// between the checkpoint and the batch are read from the log first, so nothing is ever skipped
// whatever the transport delivers.
func (p *projector) apply(ctx context.Context, batch []domain.Recorded) error {
	if len(batch) == 0 {
		return nil
	}
	for {
		done, err := p.applyOnce(ctx, batch)
		if err != nil || done {
			return err
		}
	}
}

func (p *projector) applyOnce(ctx context.Context, batch []domain.Recorded) (done bool, err error) {
	name := p.projection.Name()
	tx, err := p.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("pipeline: %s: begin: %w", name, err)
	}
	defer tx.Rollback()
	if p.db.Dialect == sqldb.Postgres {
		// A read model is rebuilt from the log, and its checkpoint commits with it: a commit lost
		// to a database crash is simply applied again. So it need not wait for the disk.
		if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit TO OFF`); err != nil {
			return false, fmt.Errorf("pipeline: %s: %w", name, err)
		}
	}
	var checkpoint int64
	if err := tx.QueryRowContext(ctx, `SELECT position FROM projection_checkpoints WHERE name = $1`+p.db.ForUpdate(), name).Scan(&checkpoint); err != nil {
		return false, fmt.Errorf("pipeline: %s: lock checkpoint: %w", name, err)
	}
	fresh := afterPosition(batch, checkpoint)
	if len(fresh) == 0 {
		p.tracker.advance(name, checkpoint)
		return true, nil
	}
	done = true
	if fresh[0].Position > checkpoint+1 {
		missing, err := p.log.ReadLog(ctx, checkpoint, int(min(fresh[0].Position-checkpoint-1, catchUpChunk)))
		if err != nil {
			return false, fmt.Errorf("pipeline: %s: catch up: %w", name, err)
		}
		if len(missing) == 0 || missing[0].Position != checkpoint+1 {
			return false, fmt.Errorf("pipeline: %s: the log has no event after %d before %d", name, checkpoint, fresh[0].Position)
		}
		fresh, done = missing, false
	}
	if err := p.projection.Apply(ctx, tx, fresh); err != nil {
		return false, err
	}
	last := fresh[len(fresh)-1].Position
	if _, err := tx.ExecContext(ctx, `UPDATE projection_checkpoints SET position = $1, updated_at = $2 WHERE name = $3`,
		last, time.Now().UnixMilli(), name); err != nil {
		return false, fmt.Errorf("pipeline: %s: move checkpoint: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("pipeline: %s: commit: %w", name, err)
	}
	p.tracker.advance(name, last)
	p.observer.Applied(name, last, fresh[len(fresh)-1].OccurredAt)
	return done, nil
}

// afterPosition returns the events of a position-ordered batch that come after pos.
func afterPosition(batch []domain.Recorded, pos int64) []domain.Recorded {
	for i, e := range batch {
		if e.Position > pos {
			return batch[i:]
		}
	}
	return nil
}
