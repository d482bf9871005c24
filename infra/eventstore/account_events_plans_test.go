package eventstore_test

import (
	"math"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A page of the feed or of a replay reads each type from the cursor on by the (account_id, type,
// position) index, in order: never the log's primary key from the cursor on, filtering, which
// PostgreSQL chose when its statistics said the type was spread evenly over the log. Here the
// type's events begin at position 20,001 of a 200,000-event log and the cursor is at 10: that walk
// would read 20,000 rows of other types first. Checked with statistics of a small log left stale
// and with current ones. On PostgreSQL the plan it runs (custom: the statement is prepared, and a
// generic plan is only taken when it costs no more) is an index scan in order; the generic plan,
// which cannot estimate the row comparison, and the plan without any statistics may instead
// collect the type's rows from the cursor on by a bitmap of the same index and sort them, as
// before the change (the service analyzes changed tables itself, sqldb.AnalyzeChanged, so a
// table without statistics lasts until its next look); never the primary key or the table.
func TestAccountEventsReadEachTypeByItsIndex(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		keepUnanalyzed(t, db)
		fillTypes(t, db, 0, 100)
		analyze(t, db) // statistics of a small log, left stale as it grows
		fillTypes(t, db, 100, logSize)
		checkAccountTypeScan(t, db, "stale statistics", true)
		analyze(t, db)
		checkAccountTypeScan(t, db, "current statistics", true)
	})
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		keepUnanalyzed(t, db)
		fillTypes(t, db, 0, logSize)
		checkAccountTypeScan(t, db, "no statistics", dialect == sqldb.SQLite)
	})
}

// fillTypes appends the events of positions from+1..to of one account: up to position 20,000
// purchases and form submissions in turn, after it rebills and form submissions.
func fillTypes(t *testing.T, db *sqldb.DB, from, to int) {
	t.Helper()
	kind := `CASE WHEN (g + 1) % 2 = 1 THEN 'FormSubmitted' WHEN g + 1 <= 20000 THEN 'CheckoutPurchased' ELSE 'CheckoutRebilled' END`
	query := `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
		SELECT g + 1, 'e' || g, 's_' || g, 1, ` + kind + `, 1, 0, 'acc_feed', '{}', '{}'
		FROM generate_series($1::bigint, $2::bigint - 1) AS g`
	if db.Dialect == sqldb.SQLite {
		query = `WITH RECURSIVE s(g) AS (SELECT CAST($1 AS INTEGER) UNION ALL SELECT g + 1 FROM s WHERE g + 1 < CAST($2 AS INTEGER))
			INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
			SELECT g + 1, 'e' || g, 's_' || g, 1, ` + kind + `, 1, 0, 'acc_feed', '{}', '{}' FROM s`
	}
	if _, err := db.Write.Exec(query, from, to); err != nil {
		t.Fatalf("fill the log: %v", err)
	}
	if db.Dialect == sqldb.Postgres {
		if _, err := db.Write.Exec(`SELECT setval('events_position_seq', $1)`, to); err != nil {
			t.Fatal(err)
		}
	}
}

// checkAccountTypeScan explains the scan of the rebills from position 10 on and fails on a plan
// that walks the primary key or the table; ordered asks for an index scan in order (no sort).
func checkAccountTypeScan(t *testing.T, db *sqldb.DB, state string, ordered bool) {
	t.Helper()
	conn, err := db.Write.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	statement := eventstore.AccountTypeScan(db.Dialect == sqldb.Postgres)
	args := []any{"acc_feed", int64(10), int64(0), int64(math.MaxInt64)}
	if db.Dialect == sqldb.Postgres {
		args = append(args, int64(logSize))
	} else {
		statement = strings.NewReplacer("$1", "?1", "$2", "?2", "$3", "?3", "$4", "?4", "$5", "?5").Replace(statement)
	}
	args = append(args, "CheckoutRebilled")
	for i, plan := range explain(t, conn, db.Dialect, statement, args...) {
		custom := i == 0 // SQLite has one plan; PostgreSQL's custom plan, then its generic one
		switch {
		case !strings.Contains(plan, "events_by_account_type"),
			strings.Contains(plan, "events_pkey"), strings.Contains(plan, "Seq Scan"), strings.Contains(plan, "SCAN events"):
			t.Errorf("%s: the scan of one type does not read it by its index:\n%s", state, plan)
		case ordered && custom && (strings.Contains(plan, "Sort") || strings.Contains(plan, "TEMP B-TREE")):
			t.Errorf("%s: the scan of one type sorts the type's events:\n%s", state, plan)
		}
	}
}
