package eventstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The two statements of the write path that touch a stream (the tail a command reads, the
// versions an append checks under the head lock) walk the (stream_id, version) index whatever the
// statistics say: with none (PostgreSQL here runs with autovacuum off, so nothing is analyzed),
// after ANALYZE while one stream is nearly the whole log, and, on PostgreSQL, with the generic
// plan a prepared statement may switch to. A sequential scan there would make a write cost the
// length of the log.
func TestWritePathStatementsUseTheStreamIndex(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, db := newStore(t, dialect)
		ctx := context.Background()
		const long = 20000
		for version := 0; version < long; version += 2000 {
			if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_long", ExpectedVersion: int64(version), Events: tagged("ct_long", 2000)}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 20 {
			stream := fmt.Sprintf("ct_short_%d", i)
			if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: stream, Events: tagged(stream, 3)}); err != nil {
				t.Fatal(err)
			}
		}
		conn, err := db.Write.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		check := func(when string) {
			t.Helper()
			for _, c := range []struct {
				name  string
				plans []string
			}{
				{"tail of the long stream", explain(t, conn, dialect, tailStatement(dialect), "ct_long", long-3)},
				{"tail of a short stream", explain(t, conn, dialect, tailStatement(dialect), "ct_short_1", 1)},
				{"versions of an append", explain(t, conn, dialect, versionsStatement(dialect), "ct_long", "ct_short_1")},
			} {
				for _, plan := range c.plans {
					if strings.Contains(plan, "Seq Scan on events") || strings.Contains(plan, "SCAN events") ||
						!strings.Contains(plan, streamIndex(dialect)) {
						t.Errorf("%s, %s: the plan does not walk the stream index:\n%s", when, c.name, plan)
					}
				}
			}
		}
		check("no statistics")
		if err := sqldb.Analyze(ctx, conn, dialect); err != nil { // as Migrate analyzes
			t.Fatal(err)
		}
		check("after ANALYZE with one stream nearly the whole log")
	})
}

// logSize is large enough for a sequential scan of the log to cost what an index probe does not.
const logSize = 200_000

// On a large log of many streams the append, the tail read and the relay's read use an index
// whatever the statistics say: analyzed while the log was small and grown since, analyzed as it
// is, and never analyzed. (The test above covers one stream that is nearly the whole log.)
func TestWritePathPlansNeverScanALargeLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		keepUnanalyzed(t, db)
		fill(t, db, 0, 100)
		analyze(t, db) // statistics of a small log, left stale as it grows
		fill(t, db, 100, logSize)
		checkLargeLogPlans(t, db, "stale statistics")
		analyze(t, db)
		checkLargeLogPlans(t, db, "current statistics")
	})
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		keepUnanalyzed(t, db)
		fill(t, db, 0, logSize)
		checkLargeLogPlans(t, db, "no statistics")
	})
}

// keepUnanalyzed turns autovacuum off for the log, as these machines run PostgreSQL: only the
// test's own ANALYZE gives it statistics.
func keepUnanalyzed(t *testing.T, db *sqldb.DB) {
	t.Helper()
	if db.Dialect != sqldb.Postgres {
		return
	}
	if _, err := db.Write.Exec(`ALTER TABLE events SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
}

// fillColumns are the type, schema version, time, account, contact and subscription of fill's
// event g: one account; one event in three names another contact, as a purchase, a lead or a
// submission does (events_by_contact), one in six of them with a subscription; the types of the
// erasure's and the export's reads among them, so that the account's events of those types
// (events_by_account_type) are as many as a real log's.
const fillColumns = `CASE g % 4 WHEN 0 THEN 'LeadCreated' WHEN 1 THEN 'CheckoutPurchased' ELSE 'TagApplied' END, 1, 0, 'acc_plans',
	CASE WHEN g % 3 = 0 THEN 'ct_' || ((g * 7) % 5000) END, CASE WHEN g % 18 = 0 THEN 'sub_' || (g % 700) END`

// fill appends the events of positions from+1..to: 5,000 streams of up to 40 events each.
func fill(t *testing.T, db *sqldb.DB, from, to int) {
	t.Helper()
	query := `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata)
		SELECT g + 1, 'e' || g, 'ct_' || (g % 5000), g / 5000 + 1, ` + fillColumns + `, '{}', '{}'
		FROM generate_series($1::bigint, $2::bigint - 1) AS g`
	if db.Dialect == sqldb.SQLite {
		query = `WITH RECURSIVE s(g) AS (SELECT CAST($1 AS INTEGER) UNION ALL SELECT g + 1 FROM s WHERE g + 1 < CAST($2 AS INTEGER))
			INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata)
			SELECT g + 1, 'e' || g, 'ct_' || (g % 5000), g / 5000 + 1, ` + fillColumns + `, '{}', '{}' FROM s`
	}
	if _, err := db.Write.Exec(query, from, to); err != nil {
		t.Fatalf("fill the log: %v", err)
	}
	// Every contact has a key, found by its first event (migration 29).
	if _, err := db.Write.Exec(`INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key)
		SELECT position, stream_id, 'acc_plans', 'v1.key' FROM events WHERE version = 1 AND position > $1 AND position <= $2`, from, to); err != nil {
		t.Fatalf("fill the persons' keys: %v", err)
	}
	if db.Dialect == sqldb.Postgres {
		if _, err := db.Write.Exec(`SELECT setval('events_position_seq', $1)`, to); err != nil {
			t.Fatal(err)
		}
	}
}

func analyze(t *testing.T, db *sqldb.DB) {
	t.Helper()
	if err := sqldb.Analyze(context.Background(), db.Write, db.Dialect); err != nil { // as Migrate analyzes
		t.Fatal(err)
	}
}

// checkLargeLogPlans explains the statements of the write path, the relay and a rebuild's window
// read, and fails on a scan of the whole events table.
func checkLargeLogPlans(t *testing.T, db *sqldb.DB, state string) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Write.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	relay, head, end := eventstore.ReadLogBelowHorizon, sqldb.PGLogHead, `SELECT COALESCE(MAX(position), 0) FROM events`
	inTx, history, newest := eventstore.ReadLogQuery, eventstore.ContactHistory, eventstore.ContactHistoryNewestFirst
	subscriptions, streams, legacy := eventstore.ContactSubscriptions, eventstore.ContactStreams, eventstore.LaterPersonalQuery(db.Dialect)
	someContacts := []string{"ct_42", "ct_4242", "ct_none"}
	openable, openableArgs := eventstore.OpenableAmong(db.Dialect, someContacts)
	erasedAmong, erasedAmongArgs := eventstore.ErasedAmong(db.Dialect, someContacts)
	readKey := eventstore.ReadKeyQuery
	if db.Dialect == sqldb.SQLite {
		inTx = strings.NewReplacer("$1", "?", "$2", "?").Replace(eventstore.ReadLogQuery)
		numbered := strings.NewReplacer("$1", "?1", "$2", "?2", "$3", "?3", "$4", "?4")
		history, newest, subscriptions, streams, legacy = numbered.Replace(history), numbered.Replace(newest), numbered.Replace(subscriptions), numbered.Replace(streams), numbered.Replace(legacy)
		readKey = numbered.Replace(readKey)
		relay, head = inTx, end
	}
	for _, c := range []struct {
		name  string
		plans []string
	}{
		{"relay read", explain(t, conn, db.Dialect, relay, int64(logSize/2), int64(1000))},
		{"relay read at the head", explain(t, conn, db.Dialect, relay, int64(logSize-10), int64(1000))},
		{"head below the horizon", explain(t, conn, db.Dialect, head)},
		{"history of a contact", explain(t, conn, db.Dialect, history, "ct_42", "acc_plans", int64(0), int64(100))},
		{"history of a contact, newest first", explain(t, conn, db.Dialect, newest, "ct_42", "acc_plans", int64(math.MaxInt64), int64(100))},
		{"subscriptions of a contact (an erasure's check)", explain(t, conn, db.Dialect, subscriptions, "ct_42", "acc_plans")},
		{"customers and activations of a contact (an erasure's kept answers, an export)", explain(t, conn, db.Dialect, streams, "ct_42", "acc_plans")},
		{"lead titles in the clear of a contact (an erasure)", explain(t, conn, db.Dialect, legacy, "ct_42", "acc_plans", "LeadCreated", "LeadUpdated")},
		{"end of the log (inline catch-up, SQLite's next position)", explain(t, conn, db.Dialect, end)},
		{"read inside a catch-up or swap", explain(t, conn, db.Dialect, inTx, int64(logSize/2), int64(1000))},
		{"rebuild window", explain(t, conn, db.Dialect, eventstore.ReadRangeQuery(db.Dialect, 1), int64(logSize/2), int64(logSize/2+8192), "TagApplied")},
		{"tail of a stream", explain(t, conn, db.Dialect, tailStatement(db.Dialect), "ct_42", int64(30))},
		{"versions of an append", explain(t, conn, db.Dialect, versionsStatement(db.Dialect), "ct_42", "ct_4242")},
		{"a step of the search for a window's start", explain(t, conn, db.Dialect, windowProbe(db.Dialect), int64(logSize/2))},
		{"a person's key (a write's erasure check)", explain(t, conn, db.Dialect, readKey, "ct_42")},
		{"persons' keys (a read opening sealed events)", explain(t, conn, db.Dialect, openable, openableArgs...)},
		{"persons' keys (an append's erasure check)", explain(t, conn, db.Dialect, erasedAmong, erasedAmongArgs...)},
	} {
		for _, plan := range c.plans {
			if strings.Contains(plan, "Seq Scan on events") || strings.Contains(plan, "SCAN events") || strings.Contains(plan, "SCAN e") {
				t.Errorf("%s, %s: the plan scans the log:\n%s", state, c.name, plan)
			}
			// A key is found by its contact's first event: through the stream index, then the
			// keys' primary key, never by reading the keys' table.
			if strings.Contains(c.name, "key") && (!strings.Contains(plan, streamIndex(db.Dialect)) ||
				strings.Contains(plan, "Seq Scan on person_key_rows") || strings.Contains(plan, "SCAN k")) {
				t.Errorf("%s, %s: the plan does not find the keys through the stream index:\n%s", state, c.name, plan)
			}
			if testing.Verbose() && strings.Contains(c.name, "key") {
				t.Logf("%s, %s:\n%s", state, c.name, plan)
			}
			// On SQLite, a page of one contact's history reads that contact's events, not every event
			// of its account (PostgreSQL may AND that index's bitmap with the stream's).
			if db.Dialect == sqldb.SQLite && strings.HasPrefix(c.name, "history") && strings.Contains(plan, "events_by_account_type") {
				t.Errorf("%s, %s: the plan walks every event of the account:\n%s", state, c.name, plan)
			}
			// What an erasure and an export read of a contact is found through its entries alone:
			// not through every subscription event of the log (events_by_subscription), nor every
			// event of the account (events_by_account_type), alone or ANDed with the contact's.
			if strings.Contains(c.name, "of a contact (") && (!strings.Contains(plan, "events_by_contact") ||
				strings.Contains(plan, "events_by_account_type") || strings.Contains(plan, "events_by_subscription")) {
				t.Errorf("%s, %s: the plan does not walk the contact's entries alone:\n%s", state, c.name, plan)
			}
		}
	}
}

func windowProbe(dialect sqldb.Dialect) string {
	if dialect == sqldb.Postgres {
		return eventstore.WindowStartProbe
	}
	return strings.Replace(eventstore.WindowStartProbe, "$1", "?", 1)
}

func tailStatement(dialect sqldb.Dialect) string {
	if dialect == sqldb.Postgres {
		return eventstore.ReadStreamFromQuery
	}
	return strings.NewReplacer("$1", "?", "$2", "?").Replace(eventstore.ReadStreamFromQuery)
}

func versionsStatement(dialect sqldb.Dialect) string {
	if dialect == sqldb.Postgres {
		// the append sends the ids as one array
		return strings.Replace(eventstore.PGStreamVersions, "$1::text[]", "ARRAY[$1, $2]::text[]", 1)
	}
	return eventstore.SQLiteVersionsOf(2)
}

func streamIndex(dialect sqldb.Dialect) string {
	if dialect == sqldb.Postgres {
		return "events_stream_id_version_key"
	}
	return "sqlite_autoindex_events_" // the index of UNIQUE (stream_id, version), named by SQLite
}

// explain returns the plans of a statement with these arguments: on PostgreSQL the plan for the
// values and the generic plan of the prepared statement, on SQLite its one plan.
func explain(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect, statement string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	if dialect == sqldb.SQLite {
		return []string{sqldbtest.Plan(t, conn, `EXPLAIN QUERY PLAN `+statement, 3, args...)}
	}
	custom := sqldbtest.Plan(t, conn, `EXPLAIN `+statement, 0, args...)
	types := make([]string, len(args))
	literals := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			types[i], literals[i] = "text", "'"+v+"'"
		case []string:
			types[i], literals[i] = "text[]", "ARRAY['"+strings.Join(v, "','")+"']"
		default:
			types[i], literals[i] = "bigint", fmt.Sprint(v)
		}
	}
	for _, stmt := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE planned` + parenthesized(types) + ` AS ` + statement,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	generic := sqldbtest.Plan(t, conn, `EXPLAIN EXECUTE planned`+parenthesized(literals), 0)
	for _, stmt := range []string{`DEALLOCATE planned`, `RESET plan_cache_mode`} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return []string{custom, generic}
}

// parenthesized lists a prepared statement's types or arguments: nothing for none.
func parenthesized(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return " (" + strings.Join(items, ", ") + ")"
}
