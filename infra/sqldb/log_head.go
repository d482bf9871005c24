package sqldb

import (
	"context"
	"fmt"
)

// PGHorizon is the horizon of the log's readers on PostgreSQL, for the statement that holds it:
// the id of the oldest transaction of this database that was still running when the statement's
// snapshot was taken, or the snapshot's xmax when none was. Every event whose tx_id is below it is
// settled, committed or rolled back, and the events of those that committed are in the snapshot.
//
// A transaction of another database of the server cannot write this database's log, so it holds
// nothing back: its id is known as another database's when pg_stat_get_activity pairs it with
// that database (the link of a session to its database never changes). An id it does not pair
// (a prepared transaction, a session that ended since the snapshot) counts as this database's,
// which only waits longer. pg_snapshot_xmin alone would be the oldest transaction of the whole
// server: a long write or an idle transaction in any database (another application's, a CREATE
// DATABASE run from another) held back every reader of this log
// (TestATransactionOfAnotherDatabaseHoldsNoReaderBack).
//
// It holds only as one statement in a transaction of its own, as every reader runs it: the
// activity is read after the statement's snapshot, so an id it pairs wrongly (a session slot
// reused while it is read) was given after the snapshot and is not in its list; a later statement
// of the same transaction would reuse the activity read for the first, and could leave out an id
// of this database. Within that rule two more cases are covered, though no reader meets them: inside a transaction that has an id, the horizon stays at or below it
// (pg_current_xact_id_if_assigned; the snapshot lists every transaction but its own); on a hot
// standby, whose snapshots list no transaction (their ids are kept elsewhere), the horizon is
// the snapshot's xmin, as before.
const PGHorizon = `(SELECT LEAST(
		COALESCE(
			MIN(running) FILTER (WHERE xid(running) NOT IN (SELECT backend_xid FROM pg_stat_get_activity(NULL)
				WHERE backend_xid IS NOT NULL AND datid <> (SELECT oid FROM pg_database WHERE datname = current_database()))),
			CASE WHEN COUNT(running) = 0 THEN pg_snapshot_xmin(pg_current_snapshot()) ELSE pg_snapshot_xmax(pg_current_snapshot()) END),
		pg_current_xact_id_if_assigned())
	FROM pg_snapshot_xip(pg_current_snapshot()) AS running)`

// PGLogHead is the statement of LogHead on PostgreSQL (exported for the test of its plan): the
// last position below the horizon of the log's readers (PGHorizon, infra/eventstore ReadLog).
// Every position up to it is settled, committed or rolled back. The primary key answers it,
// backwards, whatever the statistics say (infra/eventstore/plans_test.go); tx_id only filters the
// newest rows.
const PGLogHead = `SELECT COALESCE((SELECT position FROM events WHERE tx_id < ` + PGHorizon + ` ORDER BY position DESC LIMIT 1), 0)`

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
