package webhooks

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Each chunk of an ended subscription's pending deliveries is a range of
// webhook_deliveries_pending_by_subscription after the last id given up, whatever the
// statistics say: with 10,000 pending beside 20,000 delivered, never analyzed (PostgreSQL here
// runs with autovacuum off), analyzed before they were pending, and analyzed as they are; on
// PostgreSQL with the custom plan and the generic one. A sort or a read of every pending delivery
// would cost each chunk the whole backlog. The chunk is the next ids in order.
func TestGivingUpWalksThePendingIDs(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		conn := claimTable(t, dialect)
		fillDeliveries(t, conn, 1, 20000, "succeeded")
		checkGiveUpPlans(t, conn, dialect, "no statistics, none pending")
		analyzeDeliveries(t, conn, dialect)
		fillDeliveries(t, conn, 10001, 20000, "pending")
		checkGiveUpPlans(t, conn, dialect, "statistics from before they were pending")
		analyzeDeliveries(t, conn, dialect)
		checkGiveUpPlans(t, conn, dialect, "current statistics")
		checkGiveUpTakesTheNextIDs(t, conn, dialect)
	})
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		conn := claimTable(t, dialect)
		fillDeliveries(t, conn, 1, 20000, "succeeded")
		fillDeliveries(t, conn, 10001, 20000, "pending")
		checkGiveUpPlans(t, conn, dialect, "no statistics")
		checkGiveUpTakesTheNextIDs(t, conn, dialect)
	})
}

// checkGiveUpPlans fails on a plan of a chunk that sorts or reads the table rather than walking
// the subscription's pending ids.
func checkGiveUpPlans(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect, state string) {
	t.Helper()
	for _, plan := range explainGiveUp(t, conn, dialect) {
		bad := strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Bitmap") ||
			strings.Contains(plan, "TEMP B-TREE") || sqliteScan(plan)
		if bad || !strings.Contains(plan, "webhook_deliveries_pending_by_subscription") {
			t.Errorf("%s: giving up does not walk the subscription's pending ids:\n%s", state, plan)
		}
	}
}

// explainGiveUp returns the plans of a chunk: SQLite's, or PostgreSQL's custom and generic ones.
func explainGiveUp(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect) []string {
	t.Helper()
	ctx := context.Background()
	statement := giveUpStatement(dialect, giveUpChunkSize)
	args := []any{"given up: disabled", 9000, "wh_1", "dlv_pending_15"}
	if dialect == sqldb.SQLite {
		return []string{sqldbtest.Plan(t, conn, `EXPLAIN QUERY PLAN `+statement, 3, args...)}
	}
	custom := sqldbtest.Plan(t, conn, `EXPLAIN `+statement, 0, args...)
	for _, stmt := range []string{`SET plan_cache_mode = force_generic_plan`, `PREPARE give_up (text, bigint, text, text) AS ` + statement} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	generic := sqldbtest.Plan(t, conn, fmt.Sprintf(`EXPLAIN EXECUTE give_up ('%s', %d, '%s', '%s')`, args...), 0)
	for _, stmt := range []string{`DEALLOCATE give_up`, `RESET plan_cache_mode`} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return []string{custom, generic}
}

// checkGiveUpTakesTheNextIDs gives up a chunk after an id and finds it failed the next 1,000
// pending ids in order, and nothing else.
func checkGiveUpTakesTheNextIDs(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect) {
	t.Helper()
	ctx := context.Background()
	var pending []string
	rows, err := conn.QueryContext(ctx, `SELECT id FROM webhook_deliveries WHERE status = 'pending'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		pending = append(pending, id)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(pending)
	after := pending[499]
	rows, err = conn.QueryContext(ctx, giveUpStatement(dialect, giveUpChunkSize), "given up: disabled", 9000, "wh_1", after)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := pending[500:1500]; !slices.Equal(got, want) {
		t.Fatalf("a chunk after %s gave up %d deliveries (%v...), want the next %d pending ids (%v...)", after, len(got), got[:min(3, len(got))], len(want), want[:3])
	}
	var failed int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'failed'`).Scan(&failed); err != nil || failed != 1000 {
		t.Fatalf("failed deliveries = %d (%v), want the chunk's 1000", failed, err)
	}
}
