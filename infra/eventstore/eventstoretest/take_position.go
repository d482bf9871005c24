package eventstoretest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// TakePosition takes the next position of the log inside tx as an append does, for a test that
// writes an event row itself: on PostgreSQL from the log's sequence, together with the
// transaction's id (event_log_take); on SQLite after the last event, with tx holding the write
// lock from then on.
func TakePosition(t testing.TB, tx *sql.Tx, dialect sqldb.Dialect) int64 {
	t.Helper()
	query := `SELECT first_position FROM event_log_take(1)`
	if dialect == sqldb.SQLite {
		// A write first, so that the transaction holds the write lock before it reads the end.
		if _, err := tx.ExecContext(context.Background(), `UPDATE projection_checkpoints SET name = name WHERE 0 = 1`); err != nil {
			t.Fatalf("take the write lock: %v", err)
		}
		query = `SELECT COALESCE(MAX(position), 0) + 1 FROM events`
	}
	var pos int64
	if err := tx.QueryRowContext(context.Background(), query).Scan(&pos); err != nil {
		t.Fatalf("take a position: %v", err)
	}
	return pos
}
