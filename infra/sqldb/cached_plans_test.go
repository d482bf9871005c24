package sqldb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// TestCachedPlansKeepTheirIndexAsTablesGrow reads a contact by id, prepared as pgx prepares every
// statement, ten times while the contacts table is empty, as on a new deployment: PostgreSQL then
// caches a generic plan for the statement. Once the table holds 20,000 contacts (never analyzed,
// as on a PostgreSQL without autovacuum), the statement must still probe the primary key, not
// scan every contact on each read; a query no index serves still scans, without being JIT-compiled
// for the penalty that keeps the others off scans. SQLite plans each statement by its indexes: the
// read must be an index search there too.
func TestCachedPlansKeepTheirIndexAsTablesGrow(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		conn, err := db.Read.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		run, explain := `SELECT id, email FROM contacts WHERE id = 'c1'`, `EXPLAIN QUERY PLAN SELECT id, email FROM contacts WHERE id = 'c1'`
		if dialect == sqldb.Postgres {
			if _, err := conn.ExecContext(ctx, `PREPARE contact_by_id AS SELECT id, email FROM contacts WHERE id = $1`); err != nil {
				t.Fatal(err)
			}
			run, explain = `EXECUTE contact_by_id('c1')`, `EXPLAIN EXECUTE contact_by_id('c1')`
		}
		for range 10 { // PostgreSQL settles on a generic plan after five executions
			if _, err := conn.ExecContext(ctx, run); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Write.ExecContext(ctx, `
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
			INSERT INTO contacts (id, account_id, email, email_key, first_name, last_name, phone, tag_ids, custom_fields, created_at, updated_at, seq)
			SELECT 'c' || i, 'acc_1', i || '@example.com', i || '@example.com', '', '', '', '[]', '{}', i, i, i FROM n`); err != nil {
			t.Fatal(err)
		}
		col := 0
		if dialect == sqldb.SQLite {
			col = 3
		}
		plan := sqldbtest.Plan(t, conn, explain, col)
		switch {
		case dialect == sqldb.Postgres && (!strings.Contains(plan, "contacts_pkey") || strings.Contains(plan, "Seq Scan")):
			t.Fatalf("the plan cached while contacts was empty does not probe its primary key at 20,000 contacts:\n%s", plan)
		case dialect == sqldb.SQLite && !strings.Contains(plan, "USING INDEX"):
			t.Fatalf("a read of a contact by id at 20,000 contacts is not an index search:\n%s", plan)
		}
		if dialect == sqldb.Postgres {
			// A query no index serves still scans, and is not compiled for it (JIT goes by cost,
			// which the scan's penalty inflates).
			scan := sqldbtest.Plan(t, conn, `EXPLAIN SELECT id FROM contacts WHERE first_name = 'Ada'`, 0)
			if !strings.Contains(scan, "Seq Scan") || strings.Contains(scan, "JIT") {
				t.Fatalf("a query no index serves should scan, uncompiled:\n%s", scan)
			}
		}
	})
}
