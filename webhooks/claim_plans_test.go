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

// The claim walks the pending deliveries in the order it sends them, whatever the statistics
// say: with a replay's 10,000 deliveries pending at one next_attempt_at beside 20,000 delivered
// ones (their originals among them), never analyzed (PostgreSQL here runs with autovacuum off),
// analyzed before the replay, and analyzed as they are; on PostgreSQL with the custom plan and
// with the generic one a prepared statement may switch to. A sort, a bitmap or an anti-join
// would read every pending delivery at each claim. It then takes the head of each ordering key,
// oldest first.
func TestClaimWalksThePendingIndex(t *testing.T) {
	// Statistics taken before the replay (none pending then), then current ones.
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		conn := claimTable(t, dialect)
		fillDeliveries(t, conn, 1, 20000, "succeeded")
		analyzeDeliveries(t, conn, dialect)
		fillDeliveries(t, conn, 10001, 20000, "pending")
		checkClaimPlans(t, conn, dialect, "statistics from before the replay")
		analyzeDeliveries(t, conn, dialect)
		checkClaimPlans(t, conn, dialect, "current statistics")
		checkClaimTakesHeads(t, conn, dialect)
	})
	// Never analyzed.
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		conn := claimTable(t, dialect)
		fillDeliveries(t, conn, 1, 20000, "succeeded")
		fillDeliveries(t, conn, 10001, 20000, "pending")
		checkClaimPlans(t, conn, dialect, "no statistics")
		checkClaimTakesHeads(t, conn, dialect)
	})
}

// A claim takes at most the deliveries asked for, walking the queue once, even with the generic
// plan PostgreSQL made for it while the table was empty: a prepared statement keeps that plan
// until the table is analyzed again, and the dispatcher claims every 250 ms from the start. Such
// a plan ran the walk again for every row of the table, and each run took rows the ones before
// had not.
func TestClaimTakesNoMoreThanAsked(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		conn := claimTable(t, dialect)
		ctx := context.Background()
		analyzeDeliveries(t, conn, dialect)
		claim := func(until, now int64) []string {
			t.Helper()
			query, args := claimStatement(dialect)+` RETURNING id`, []any{until, now, 16}
			if dialect == sqldb.Postgres {
				query, args = fmt.Sprintf(`EXECUTE claim (%d, %d, 16)`, until, now), nil
			}
			return claimedIDs(t, conn, query, args...)
		}
		if dialect == sqldb.Postgres {
			for _, stmt := range []string{`SET plan_cache_mode = force_generic_plan`,
				`PREPARE claim (bigint, bigint, bigint) AS ` + claimStatement(dialect) + ` RETURNING id`} {
				if _, err := conn.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
		}
		if got := claim(2000, 1000); len(got) != 0 {
			t.Fatalf("a claim of an empty table took %v", got)
		}
		// 2,700 delivered and 300 due, none with an ordering key (form.submitted).
		fillDeliveries(t, conn, 1, 2700, "succeeded")
		fillDeliveries(t, conn, 2701, 3000, "pending")
		if _, err := conn.ExecContext(ctx, `UPDATE webhook_deliveries SET ordering_key = ''`); err != nil {
			t.Fatal(err)
		}
		if got := claim(9000, 6000); len(got) != 16 {
			t.Fatalf("a claim of 16 took %d deliveries", len(got))
		}
		if dialect == sqldb.Postgres {
			plan := sqldbtest.Plan(t, conn, `EXPLAIN EXECUTE claim (9000, 6000, 16)`, 0)
			if !strings.Contains(plan, "Tid Scan") || strings.Contains(plan, "Join") {
				t.Errorf("the claim's generic plan, made on the empty table, does not run its walk once and update by address:\n%s", plan)
			}
		}
	})
}

// claimedIDs runs a claim that returns the ids it took.
func claimedIDs(t *testing.T, conn *sql.Conn, query string, args ...any) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// claimTable is a connection to a new database whose deliveries PostgreSQL never analyzes by
// itself (on SQLite, the one write connection).
func claimTable(t *testing.T, dialect sqldb.Dialect) *sql.Conn {
	t.Helper()
	db := sqldbtest.Open(t, dialect)
	if dialect == sqldb.Postgres {
		if _, err := db.Write.Exec(`ALTER TABLE webhook_deliveries SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := db.Write.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// fillDeliveries records deliveries of the events at positions from..to, over 1,000 billing
// subscriptions, all due at 5000 (pending) or long done. The statement runs on both drivers.
func fillDeliveries(t *testing.T, conn *sql.Conn, from, to int, status string) {
	t.Helper()
	fill := `WITH RECURSIVE s(p) AS (SELECT CAST($1 AS BIGINT) UNION ALL SELECT p + 1 FROM s WHERE p < CAST($2 AS BIGINT))
		INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body,
			status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at)
		SELECT 'dlv_' || $3 || '_' || p, 'acc_1', 'wh_1', 'evt_' || p, 'checkout.rebilled', p, 'sub_' || (p % 1000), '{}',
			$3, 0, 10, 5000, 0, 0, '', 1000, 1000
		FROM s`
	if _, err := conn.ExecContext(context.Background(), fill, from, to, status); err != nil {
		t.Fatalf("fill the deliveries: %v", err)
	}
}

// analyzeDeliveries analyzes as Migrate does (on SQLite, without sqlite_stat4's samples).
func analyzeDeliveries(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect) {
	t.Helper()
	if err := sqldb.Analyze(context.Background(), conn, dialect); err != nil {
		t.Fatal(err)
	}
}

// checkClaimPlans fails on a plan of the claim that sorts, or reads the table or every pending
// delivery, rather than walking the two pending indexes.
func checkClaimPlans(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect, state string) {
	t.Helper()
	for _, plan := range explainClaim(t, conn, dialect, claimStatement(dialect)) {
		if badClaimPlan(plan, dialect) || !strings.Contains(plan, "webhook_deliveries_pending_due") || !strings.Contains(plan, "webhook_deliveries_pending_ordered") {
			t.Errorf("%s: the claim does not walk the pending indexes:\n%s", state, plan)
		}
	}
}

// checkClaimTakesHeads claims 16: the oldest pending delivery of 16 billing subscriptions.
func checkClaimTakesHeads(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect) {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), claimStatement(dialect)+` RETURNING event_position`, 9000, 6000, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[int64]bool{}
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		got[p] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for p := int64(10001); p <= 10016; p++ {
		if !got[p] || len(got) != 16 {
			t.Fatalf("claimed positions %v, want the 16 oldest pending, 10001-10016", got)
		}
	}
}

// explainClaim returns the plans of the claim: SQLite's, or PostgreSQL's custom and generic ones.
func explainClaim(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect, statement string) []string {
	return explainClaimWith(t, conn, dialect, statement)
}

// explainClaimWith is explainClaim of a statement with parameters after the claim's three: more
// holds each one's type on PostgreSQL and its value, as sqldb.AnyOf makes it for an array.
func explainClaimWith(t *testing.T, conn *sql.Conn, dialect sqldb.Dialect, statement string, more ...[2]any) []string {
	t.Helper()
	ctx := context.Background()
	args, types, literals := []any{9000, 6000, 16}, []string{"bigint", "bigint", "bigint"}, []string{"9000", "6000", "16"}
	for _, m := range more {
		args = append(args, m[1])
		types = append(types, m[0].(string))
		switch v := m[1].(type) {
		case []string:
			literals = append(literals, "'{"+strings.Join(v, ",")+"}'")
		default:
			literals = append(literals, fmt.Sprintf("'%v'", v))
		}
	}
	if dialect == sqldb.SQLite {
		return []string{sqldbtest.Plan(t, conn, `EXPLAIN QUERY PLAN `+statement, 3, args...)}
	}
	custom := sqldbtest.Plan(t, conn, `EXPLAIN `+statement, 0, args...)
	for _, stmt := range []string{`SET plan_cache_mode = force_generic_plan`, `PREPARE claim (` + strings.Join(types, ", ") + `) AS ` + statement} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	generic := sqldbtest.Plan(t, conn, `EXPLAIN EXECUTE claim (`+strings.Join(literals, ", ")+`)`, 0)
	for _, stmt := range []string{`DEALLOCATE claim`, `RESET plan_cache_mode`} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return []string{custom, generic}
}

// sqliteScan tells a SQLite plan that reads a whole table: a SCAN that no index orders (the
// limit's subquery is a SCAN CONSTANT ROW).
func sqliteScan(plan string) bool {
	for _, line := range strings.Split(plan, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "SCAN") && !strings.Contains(line, "USING") && line != "SCAN CONSTANT ROW" &&
			!strings.HasPrefix(line, "SCAN json_each") { // a list of values (sqldb.AnyOf)
			return true
		}
	}
	return false
}

// A replay of an event whose original delivery is still pending makes a second delivery at the
// same position for the same ordering key: the key still has one head, the older delivery (then
// the smaller id), and the other is claimed only once it is done. Here the replay's id sorts
// before the original's, and a second pair shares its created_at too.
func TestClaimTakesOneHeadPerPosition(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		conn := claimTable(t, dialect)
		ctx := context.Background()
		insert := `INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body,
				status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at)
			VALUES ($1, 'acc_1', 'wh_1', $2, 'checkout.rebilled', $3, $4, '{}', 'pending', 0, 10, 5000, 0, 0, '', $5, $5)`
		for _, d := range []struct {
			id, key   string
			position  int
			createdAt int64
		}{
			{"dlv_b_original", "sub_1", 7, 1000}, {"dlv_a_replay", "sub_1", 7, 2000},
			{"dlv_d_first", "sub_2", 8, 3000}, {"dlv_e_second", "sub_2", 8, 3000},
		} {
			if _, err := conn.ExecContext(ctx, insert, d.id, fmt.Sprintf("evt_%d", d.position), d.position, d.key, d.createdAt); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(now int64) []string {
			t.Helper()
			ids := claimedIDs(t, conn, claimStatement(dialect)+` RETURNING id`, 1000, now, 16)
			slices.Sort(ids)
			return ids
		}
		if got := claim(6000); !slices.Equal(got, []string{"dlv_b_original", "dlv_d_first"}) {
			t.Fatalf("first claim took %v, want the older delivery of each key only", got)
		}
		// Their leases lapse (on the database's clock): still the only heads while pending.
		if _, err := conn.ExecContext(ctx, `UPDATE webhook_deliveries SET claimed_until = 0`); err != nil {
			t.Fatal(err)
		}
		if got := claim(8000); !slices.Equal(got, []string{"dlv_b_original", "dlv_d_first"}) {
			t.Fatalf("a claim after the leases lapsed took %v, want the same heads again", got)
		}
		if _, err := conn.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'succeeded', claimed_until = 0 WHERE id IN ('dlv_b_original', 'dlv_d_first')`); err != nil {
			t.Fatal(err)
		}
		if got := claim(10000); !slices.Equal(got, []string{"dlv_a_replay", "dlv_e_second"}) {
			t.Fatalf("once the heads succeeded the claim took %v, want the replay and the second delivery", got)
		}
	})
}

// While an account is slow its deliveries are claimed apart (sendSlots). The claim of every other
// account passes them over along the same pending indexes; the slow account's own claim walks
// webhook_deliveries_pending_by_account and reads no other account's deliveries; whatever the
// statistics say. Each takes the heads it should: the other account's oldest, though the slow
// one's are older, and the slow account's oldest, though they sit behind nothing else here.
func TestSharedClaimsWalkTheirIndexes(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		conn := claimTable(t, dialect)
		fillDeliveries(t, conn, 1, 20000, "succeeded")
		analyzeDeliveries(t, conn, dialect)
		fillDeliveries(t, conn, 10001, 20000, "pending")
		// The newest 100 pending deliveries are another account's.
		if _, err := conn.ExecContext(context.Background(), `UPDATE webhook_deliveries SET account_id = 'acc_2', subscription_id = 'wh_2'
			WHERE status = 'pending' AND event_position > 19900`); err != nil {
			t.Fatal(err)
		}
		arrayType := map[sqldb.Dialect]string{sqldb.Postgres: "text[]", sqldb.SQLite: ""}[dialect]
		anyOf := func(values ...string) any {
			_, args := sqldb.AnyOf(dialect, "x", 1, values)
			return args[0]
		}
		for _, state := range []string{"statistics from before the deliveries", "current statistics"} {
			if state == "current statistics" {
				analyzeDeliveries(t, conn, dialect)
			}
			for _, plan := range explainClaimWith(t, conn, dialect, claimExceptStatement(dialect), [2]any{arrayType, anyOf("acc_1")}) {
				if badClaimPlan(plan, dialect) || !strings.Contains(plan, "webhook_deliveries_pending_due") {
					t.Errorf("%s: the claim passing over slow accounts does not walk the pending indexes:\n%s", state, plan)
				}
			}
			for _, plan := range explainClaimWith(t, conn, dialect, claimForAccountStatement(dialect), [2]any{"text", "acc_2"}, [2]any{arrayType, anyOf()}) {
				if badClaimPlan(plan, dialect) || !strings.Contains(plan, "webhook_deliveries_pending_by_account") {
					t.Errorf("%s: the claim of a slow account does not walk its own pending deliveries:\n%s", state, plan)
				}
			}
		}

		positions := func(query string, args ...any) []int64 {
			t.Helper()
			rows, err := conn.QueryContext(context.Background(), query+` RETURNING event_position`, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []int64
			for rows.Next() {
				var p int64
				if err := rows.Scan(&p); err != nil {
					t.Fatal(err)
				}
				got = append(got, p)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			return got
		}
		span := func(from, to int64) (out []int64) {
			for p := from; p <= to; p++ {
				out = append(out, p)
			}
			return out
		}
		if got := positions(claimExceptStatement(dialect), 9000, 6000, 16, anyOf("acc_1")); !slices.Equal(got, span(19901, 19916)) {
			t.Errorf("the claim passing over acc_1 took positions %v, want acc_2's oldest, 19901-19916", got)
		}
		if got := positions(claimForAccountStatement(dialect), 9000, 6000, 16, "acc_1", anyOf("wh_other")); !slices.Equal(got, span(10001, 10016)) {
			t.Errorf("the claim of acc_1 took positions %v, want its oldest, 10001-10016", got)
		}
		if got := positions(claimForAccountStatement(dialect), 9000, 6000, 16, "acc_1", anyOf("wh_1")); len(got) != 0 {
			t.Errorf("the claim of acc_1 passing over its only subscription took positions %v", got)
		}
	})
}

// badClaimPlan tells a plan of a claim that sorts, reads a whole table or every pending delivery,
// or (on PostgreSQL) does not update the rows it locked by their address.
func badClaimPlan(plan string, dialect sqldb.Dialect) bool {
	bad := strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Bitmap") ||
		strings.Contains(plan, "Anti Join") || strings.Contains(plan, "TEMP B-TREE") || sqliteScan(plan)
	return bad || dialect == sqldb.Postgres && !strings.Contains(plan, "Tid Scan")
}
