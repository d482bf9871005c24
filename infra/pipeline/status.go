package pipeline

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// Status is how far one projection is, as `funnel projections list` shows it.
type Status struct {
	Name string
	// Position is how far the read model reflects the log: the position before the first event
	// it still has to apply, or the log's head when it has none.
	Position int64
	// Behind counts the events it still has to apply.
	Behind int64
}

// Statuses tells how far each projection is, from the database alone: it changes nothing, so it
// runs beside serving processes. A projection's stored checkpoint may lag behind the log without
// the projection being behind: batches it has nothing to do with move its checkpoint only with
// its next change, or when the pipeline's saver writes it. What counts is what it still has to
// apply: the events past its checkpoint of the types it handles. It returns the log's head too.
func Statuses(ctx context.Context, db *sqldb.DB, all []Projection) (int64, []Status, error) {
	head, err := db.LogHead(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("pipeline: %w", err)
	}
	checkpoints, err := storedCheckpoints(ctx, db, head)
	if err != nil {
		return 0, nil, err
	}
	tails := map[int64][]typeTail{} // by checkpoint: projections often share one
	statuses := make([]Status, len(all))
	for i, p := range all {
		from := checkpoints[p.Name()] // 0 for a projection that never ran
		if _, ok := tails[from]; !ok {
			if tails[from], err = tailByType(ctx, db, from, head); err != nil {
				return 0, nil, err
			}
		}
		s := Status{Name: p.Name(), Position: head}
		for _, t := range tails[from] {
			if p.Handles(t.eventType) {
				s.Behind += t.count
				s.Position = min(s.Position, t.first-1)
			}
		}
		statuses[i] = s
	}
	return head, statuses, nil
}

// storedCheckpoints reads every projection's checkpoint. An inline projection's is the head: every
// append applies it in its own transaction (infra/eventstore/inline.go).
func storedCheckpoints(ctx context.Context, db *sqldb.DB, head int64) (map[string]int64, error) {
	rows, err := db.Read.QueryContext(ctx, `SELECT name, position, inline FROM projection_checkpoints`)
	if err != nil {
		return nil, fmt.Errorf("pipeline: read checkpoints: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var pos int64
		var inline int
		if err := rows.Scan(&name, &pos, &inline); err != nil {
			return nil, fmt.Errorf("pipeline: read checkpoints: %w", err)
		}
		if inline == 1 {
			pos = max(pos, head)
		}
		out[name] = pos
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pipeline: read checkpoints: %w", err)
	}
	return out, nil
}

// typeTail counts the events of one type in a stretch of the log.
type typeTail struct {
	eventType string
	count     int64
	first     int64 // the position of the first of them
}

// tailByType counts the events after position from, up to head, by type.
func tailByType(ctx context.Context, db *sqldb.DB, from, head int64) ([]typeTail, error) {
	rows, err := db.Read.QueryContext(ctx, `SELECT type, COUNT(*), MIN(position) FROM events WHERE position > $1 AND position <= $2 GROUP BY type`, from, head)
	if err != nil {
		return nil, fmt.Errorf("pipeline: read the log after %d: %w", from, err)
	}
	defer rows.Close()
	var out []typeTail
	for rows.Next() {
		var t typeTail
		if err := rows.Scan(&t.eventType, &t.count, &t.first); err != nil {
			return nil, fmt.Errorf("pipeline: read the log after %d: %w", from, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pipeline: read the log after %d: %w", from, err)
	}
	return out, nil
}
