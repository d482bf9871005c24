package sqldb

import (
	"fmt"

	"github.com/pressly/goose/v3"
)

// InlineLock is the key of the PostgreSQL advisory lock between appends and whatever must see the
// log and the inline read models stand still: every append that applies inline projections holds
// it shared for its transaction, so appends never wait for one another on it; the catch-up of an
// inline projection and the swap of its rebuild hold it exclusively, so they run between appends
// (infra/eventstore/inline.go). On SQLite the one writer is that lock.
const InlineLock int64 = 0x66756e6e656c01 // "funnel" 1

// positionLock is the key of the session lock inside event_log_take (migration 12): held for the
// microseconds that hand out a transaction id and positions together, never across a round trip.
const positionLock int64 = 0x66756e6e656c02 // "funnel" 2

// lockFreeLogMigration is migration 12: the log without its head row. PostgreSQL appends take
// their positions from a sequence and record their transaction id (xid8), and readers read only
// below the oldest transaction still running (docs/architecture.md, "The write path"). SQLite,
// with its one writer, takes max(position) + 1 in the append's own transaction. The inline
// projections' checkpoints get a flag: set, the projection is applied by every append, in the
// append's transaction, and its checkpoint no longer moves with each one.
func lockFreeLogMigration(dialect Dialect) *goose.Migration {
	up := []string{
		`ALTER TABLE projection_checkpoints ADD COLUMN inline INTEGER NOT NULL DEFAULT 0`,
	}
	down := []string{
		`CREATE TABLE event_log_head (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1), position BIGINT NOT NULL)`,
		`INSERT INTO event_log_head (id, position) SELECT 1, COALESCE(MAX(position), 0) FROM events`,
		// The inline projections' checkpoints move with every append again: at the head.
		`UPDATE projection_checkpoints SET position = (SELECT position FROM event_log_head) WHERE inline = 1`,
		`ALTER TABLE projection_checkpoints DROP COLUMN inline`,
	}
	if dialect == Postgres {
		up = append(up,
			// CACHE 1 (the default) is part of the design: with a cache, a session could hand out a
			// value below another's later, outside event_log_take's lock.
			`CREATE SEQUENCE events_position_seq AS BIGINT CACHE 1 OWNED BY events.position`,
			`SELECT setval('events_position_seq', GREATEST(position, 1), position > 0) FROM event_log_head`,
			// The events before this migration were committed under the head lock, in position
			// order: 0 puts them below every reader's horizon.
			`ALTER TABLE events ADD COLUMN tx_id xid8 NOT NULL DEFAULT '0'`,
			`ALTER TABLE events ALTER COLUMN tx_id SET DEFAULT pg_current_xact_id()`,
			// One critical section, held for microseconds and never across a round trip: the
			// transaction gets its id and its positions together, so that transaction ids and
			// positions grow together. A reader that reads only below the oldest running
			// transaction (pg_snapshot_xmin) then never passes a position still to commit. The lock
			// is a session lock, released at once, also when the statement is cancelled.
			fmt.Sprintf(`CREATE FUNCTION event_log_take(n BIGINT, OUT tx_id xid8, OUT first_position BIGINT) LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		PERFORM pg_advisory_lock(%[1]d);
		tx_id := pg_current_xact_id();
		first_position := nextval('events_position_seq');
		IF n > 1 THEN
			PERFORM setval('events_position_seq', first_position + n - 1);
		END IF;
		PERFORM pg_advisory_unlock(%[1]d);
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		PERFORM pg_advisory_unlock(%[1]d);
		RAISE;
	END;
END
$$`, positionLock),
			`DROP TABLE event_log_head`,
		)
		down = append([]string{
			`DROP FUNCTION event_log_take(BIGINT)`,
			`ALTER TABLE events DROP COLUMN tx_id`,
		}, down...)
		down = append(down, `DROP SEQUENCE events_position_seq`)
	} else {
		up = append(up, `DROP TABLE event_log_head`)
	}
	m := goose.NewGoMigration(12, &goose.GoFunc{RunTx: run(up)}, &goose.GoFunc{RunTx: run(down)})
	m.Source = "00012_lock_free_log.go" // how `migrate` names it
	return m
}
