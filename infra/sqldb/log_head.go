package sqldb

import (
	"context"
	"fmt"
)

// PGLogHead is the statement of LogHead on PostgreSQL (exported for the test of its plan): the
// last position below the horizon of the log's readers: the events of transactions below the oldest one still running (infra/eventstore, ReadLog). Every
// position up to it is settled, committed or rolled back. The primary key answers it, backwards,
// whatever the statistics say (infra/eventstore/plans_test.go); tx_id only filters the newest rows.
const PGLogHead = `SELECT COALESCE((SELECT position FROM events WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY position DESC LIMIT 1), 0)`

// LogHead returns the position of the last event that readers of the log may read now (0 for an
// empty log): a window of the log up to it, read once, is complete.
func (db *DB) LogHead(ctx context.Context) (int64, error) {
	query := PGLogHead
	if db.Dialect == SQLite {
		query = `SELECT COALESCE(MAX(position), 0) FROM events` // the one writer commits in position order
	}
	var head int64
	if err := db.Read.QueryRowContext(ctx, query).Scan(&head); err != nil {
		return 0, fmt.Errorf("sqldb: read the log head: %w", err)
	}
	return head, nil
}

// LogEnd returns the position of the last committed event (0 for an empty log), whether or not
// readers may read it yet: what a process waits for its read models to reach at start.
func (db *DB) LogEnd(ctx context.Context) (int64, error) {
	var end int64
	if err := db.Read.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&end); err != nil {
		return 0, fmt.Errorf("sqldb: read the end of the log: %w", err)
	}
	return end, nil
}
