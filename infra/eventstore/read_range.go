package eventstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// ReadRange returns the events of some types with positions in (after, upto], in position order.
// A rebuild reads the log one such window at a time: a window of positions bounds what it holds
// in memory whatever the mix of types, and the types leave the rest of the log in the database
// (a read model handles a few of the log's types). upto must be at most the head: positions up to
// the head are all committed, so a window read once is complete.
func (s *Store) ReadRange(ctx context.Context, after, upto int64, types []string) ([]domain.Recorded, error) {
	events, err := s.ReadRangeSealed(ctx, after, upto, types)
	if err != nil {
		return nil, err
	}
	if err := s.OpenPersonal(ctx, events); err != nil {
		return nil, err
	}
	return events, nil
}

// ReadRangeSealed is ReadRange with the events' personal values still sealed, for a reader that
// opens them with OpenPersonal elsewhere: a rebuild opens one window while it reads the next.
func (s *Store) ReadRangeSealed(ctx context.Context, after, upto int64, types []string) ([]domain.Recorded, error) {
	if len(types) == 0 {
		return nil, nil
	}
	query := readRange(s.db.Dialect, len(types))
	args := make([]any, 0, 2+len(types))
	args = append(args, after, upto)
	for _, t := range types {
		args = append(args, t)
	}
	rows, err := s.db.Read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read log in (%d, %d]: %w", after, upto, err)
	}
	return scanEvents(rows)
}

// readRange is the statement of ReadRange for n types. The range of the primary key bounds the
// scan whatever the statistics say (plans_test.go checks it on a large log); the types only filter
// it.
func readRange(dialect sqldb.Dialect, n int) string {
	return selectEvents + ` WHERE position > $1 AND position <= $2 AND type IN (` +
		sqldb.Placeholders(dialect, 3, n) + `) ORDER BY position`
}

// ReadLogIn returns up to limit events after a position, in position order, read inside tx: a
// transaction that no append runs beside (it holds sqldb.InlineLock exclusively, or SQLite's write
// lock), so every event is settled and the transaction's snapshot holds every committed one,
// including those ReadLog would keep back behind the transaction itself.
func (s *Store) ReadLogIn(ctx context.Context, tx *sql.Tx, after int64, limit int) ([]domain.Recorded, error) {
	rows, err := tx.QueryContext(ctx, readLog, after, limit)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read log after %d: %w", after, err)
	}
	return s.scanOpened(ctx, rows)
}

// ReadSettled returns up to limit events with positions in (after, upto], in position order,
// where every position up to upto is known to be settled (a reader of ReadLog has read through
// it): the stretch is read as the table holds it, past the horizon ReadLog keeps to, which any
// transaction of the database (or prepared in any) may hold back behind what this process's
// relay read from memory.
func (s *Store) ReadSettled(ctx context.Context, after, upto int64, limit int) ([]domain.Recorded, error) {
	s.noteSettled(upto)
	if events, said, err := s.recent.read(after, limit); said == fromMemory || err != nil {
		for len(events) > 0 && events[len(events)-1].Position > upto {
			events = events[:len(events)-1]
		}
		return events, err
	}
	rows, err := s.db.Read.QueryContext(ctx, readSettled, after, upto, limit)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read log in (%d, %d]: %w", after, upto, err)
	}
	return s.scanOpened(ctx, rows)
}

// readSettled is ReadSettled's statement: a range of the primary key.
const readSettled = selectEvents + ` WHERE position > $1 AND position <= $2 ORDER BY position LIMIT $3`
