package sqldb_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// TestAnalyzeChangedKeepsAPageOnItsIndex fills the contacts read model of a freshly migrated
// database (analyzed while empty, as a new deployment's is) with 20,000 contacts of two accounts,
// as a PostgreSQL without autovacuum would keep them: never analyzed again. AnalyzeChanged must
// find the table changed, analyze it, and leave the newest-first page of one account's contacts on
// the (account_id, seq) index, not a sort of all of them; called again, it finds nothing to do.
func TestAnalyzeChangedKeepsAPageOnItsIndex(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		if dialect == sqldb.SQLite {
			tables, err := db.AnalyzeChanged(ctx)
			if err != nil || tables != nil {
				t.Fatalf("SQLite: AnalyzeChanged = %v, %v; want nothing done", tables, err)
			}
			return
		}
		if _, err := db.Write.ExecContext(ctx, `
			INSERT INTO contacts (id, account_id, email, email_key, first_name, last_name, phone, tag_ids, custom_fields, created_at, updated_at, seq)
			SELECT 'c' || i, 'acc_' || (i % 2), i || '@example.com', i || '@example.com', '', '', '', '[]', '{}', i, i, i
			FROM generate_series(1, 20000) AS i`); err != nil {
			t.Fatal(err)
		}
		// The statistics of the insert reach pg_stat_user_tables within a second or so.
		deadline := time.Now().Add(15 * time.Second)
		for {
			tables, err := db.AnalyzeChanged(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(tables, "contacts") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("AnalyzeChanged never analyzed contacts (it did %v)", tables)
			}
			time.Sleep(100 * time.Millisecond)
		}
		var plan strings.Builder
		rows, err := db.Read.QueryContext(ctx, `EXPLAIN SELECT id FROM contacts WHERE account_id = 'acc_1' ORDER BY seq DESC LIMIT 51`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		rows.Close()
		if !strings.Contains(plan.String(), "contacts_newest_first") || strings.Contains(plan.String(), "Sort") {
			t.Fatalf("a page of contacts after AnalyzeChanged is not a walk of contacts_newest_first:\n%s", plan.String())
		}
		tables, err := db.AnalyzeChanged(ctx)
		if err != nil || slices.Contains(tables, "contacts") {
			t.Fatalf("AnalyzeChanged again = %v, %v; want contacts left alone", tables, err)
		}
	})
}
