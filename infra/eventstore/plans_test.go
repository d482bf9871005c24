package eventstore

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// logSize is large enough for a sequential scan of the log to cost what an index probe does not.
const logSize = 200_000

// The statements of the append, the stream read and the relay use their indexes on a large log
// whatever its statistics say: never analyzed (these machines run PostgreSQL with autovacuum
// off), analyzed while the log was small and grown since, and analyzed as it is. On PostgreSQL
// both the plan made for the values given and the generic plan a prepared statement switches to
// are checked.
func TestWritePathPlansNeverScanTheLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		if dialect == sqldb.Postgres {
			if _, err := db.Write.ExecContext(ctx, `ALTER TABLE events SET (autovacuum_enabled = false)`); err != nil {
				t.Fatal(err)
			}
		}
		fill(t, db, 0, 100)
		analyze(t, db) // statistics of a small log, left stale as it grows
		fill(t, db, 100, logSize)

		checkPlans(t, db, "stale statistics")
		analyze(t, db)
		checkPlans(t, db, "current statistics")
	})
	// A log never analyzed at all.
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		if dialect == sqldb.Postgres {
			if _, err := db.Write.Exec(`ALTER TABLE events SET (autovacuum_enabled = false)`); err != nil {
				t.Fatal(err)
			}
		}
		fill(t, db, 0, logSize)
		checkPlans(t, db, "no statistics")
	})
}

// fill appends the events of positions from+1..to: 5,000 streams of up to 40 events each.
func fill(t *testing.T, db *sqldb.DB, from, to int) {
	t.Helper()
	query := `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
		SELECT g + 1, 'e' || g, 'ct_' || (g % 5000), g / 5000 + 1, 'TagApplied', 1, 0, 'acc_plans', '{}', '{}'
		FROM generate_series($1::bigint, $2::bigint - 1) AS g`
	if db.Dialect == sqldb.SQLite {
		query = `WITH RECURSIVE s(g) AS (SELECT CAST($1 AS INTEGER) UNION ALL SELECT g + 1 FROM s WHERE g + 1 < CAST($2 AS INTEGER))
			INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
			SELECT g + 1, 'e' || g, 'ct_' || (g % 5000), g / 5000 + 1, 'TagApplied', 1, 0, 'acc_plans', '{}', '{}' FROM s`
	}
	if _, err := db.Write.Exec(query, from, to); err != nil {
		t.Fatalf("fill the log: %v", err)
	}
	if _, err := db.Write.Exec(`UPDATE event_log_head SET position = $1 WHERE id = 1`, to); err != nil {
		t.Fatal(err)
	}
}

func analyze(t *testing.T, db *sqldb.DB) {
	t.Helper()
	if _, err := db.Write.Exec(`ANALYZE`); err != nil {
		t.Fatalf("analyze: %v", err)
	}
}

// checkPlans explains every statement of the write path and the relay and fails on a scan of
// the whole events table.
func checkPlans(t *testing.T, db *sqldb.DB, state string) {
	t.Helper()
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = "ct_" + string(rune('a'+i%26)) + "x"
	}
	ids[0] = "ct_42"
	statements := []struct {
		name  string
		query string
		args  []any
	}{
		{"read stream", readStream, []any{"ct_42"}},
		{"relay read", readLog, []any{logSize / 2, 1000}},
		{"relay read at the head", readLog, []any{logSize - 10, 1000}},
	}
	if db.Dialect == sqldb.Postgres {
		statements = append(statements,
			struct {
				name  string
				query string
				args  []any
			}{"stream versions of one stream", pgStreamVersions, []any{ids[:1]}},
			struct {
				name  string
				query string
				args  []any
			}{"stream versions of 50 streams", pgStreamVersions, []any{ids}})
	} else {
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		statements = append(statements, struct {
			name  string
			query string
			args  []any
		}{"stream versions of 50 streams", sqliteStreamVersions(len(ids)), args})
	}
	for _, s := range statements {
		for _, plan := range explain(t, db, s.query, s.args) {
			if scansTheLog(db.Dialect, plan) {
				t.Errorf("%s, %s: the plan scans the log:\n%s", state, s.name, plan)
			}
		}
	}
}

// explain returns the plans a statement may run with: on PostgreSQL the custom and the generic
// plan of a prepared statement, on SQLite its query plan.
func explain(t *testing.T, db *sqldb.DB, query string, args []any) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Read.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if db.Dialect == sqldb.SQLite {
		return []string{planText(t, conn, `EXPLAIN QUERY PLAN `+query, args)}
	}
	var plans []string
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		plans = append(plans, mode+":\n"+planText(t, conn, `EXPLAIN `+query, args))
	}
	return plans
}

func planText(t *testing.T, conn *sql.Conn, query string, args []any) string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if s, ok := vals[len(vals)-1].(string); ok {
			lines = append(lines, s)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// scansTheLog tells whether a plan reads the whole events table.
func scansTheLog(dialect sqldb.Dialect, plan string) bool {
	if dialect == sqldb.SQLite {
		for _, line := range strings.Split(plan, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "SCAN events") || strings.HasPrefix(strings.TrimSpace(line), "SCAN e ") {
				return true
			}
		}
		return false
	}
	return strings.Contains(plan, "Seq Scan on events")
}
