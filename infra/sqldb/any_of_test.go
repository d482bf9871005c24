package sqldb_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// AnyOf selects the rows whose column holds one of the values, after earlier parameters, for no
// value, one and thousands (a rebuild's window names that many contacts), with one statement text
// whatever the number of values.
func TestAnyOf(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		if _, err := db.Write.Exec(`CREATE TABLE any_rows (id TEXT PRIMARY KEY, kind TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		var rows [][]any
		for i := range 3000 {
			rows = append(rows, []any{fmt.Sprintf("r%04d", i), []string{"even", "odd"}[i%2]})
		}
		if err := sqldb.ExecRows(ctx, db.Write, d, `INSERT INTO any_rows (id, kind) VALUES `, "", rows); err != nil {
			t.Fatal(err)
		}
		texts := map[string]bool{}
		kept := sqldb.KeptStatements(db.Read)
		for _, n := range []int{0, 1, 2500} {
			var values []string
			for i := range n {
				values = append(values, fmt.Sprintf("r%04d", i), fmt.Sprintf("missing%d", i))
			}
			cond, args := sqldb.AnyOf(d, "id", 2, values)
			query := `SELECT id FROM any_rows WHERE kind = $1 AND ` + cond + ` ORDER BY id`
			texts[query] = true
			got, err := ids(ctx, db, query, append([]any{"even"}, args...))
			if err != nil {
				t.Fatalf("%d values: %v", n, err)
			}
			var want []string
			for i := 0; i < n; i += 2 {
				want = append(want, fmt.Sprintf("r%04d", i))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%d values: %d rows (%v...), want %d", n, len(got), got[:min(len(got), 3)], len(want))
			}
		}
		if len(texts) != 1 {
			t.Errorf("%d statement texts, want one", len(texts))
		}
		// One statement kept on SQLite for every number of values (sqldb.Query); pgx keeps its own.
		if got, want := sqldb.KeptStatements(db.Read)-kept, map[sqldb.Dialect]int{sqldb.SQLite: 1, sqldb.Postgres: 0}[d]; got != want {
			t.Errorf("%d statements kept for the three reads, want %d", got, want)
		}
		// The array is matched on the key's index, not by reading the table.
		cond, args := sqldb.AnyOf(d, "id", 1, []string{"r0001", "r0002"})
		conn, err := db.Read.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		explain, col := `EXPLAIN SELECT id FROM any_rows WHERE `+cond, 0
		if d == sqldb.SQLite {
			explain, col = `EXPLAIN QUERY PLAN SELECT id FROM any_rows WHERE `+cond, 3
		}
		plan := sqldbtest.Plan(t, conn, explain, col, args...)
		if !strings.Contains(plan, "any_rows_pkey") && !strings.Contains(plan, "sqlite_autoindex_any_rows_1") {
			t.Errorf("plan of %s:\n%s\nwant the primary key's index", cond, plan)
		}
	})
}

// ids reads the one text column of a query's rows.
func ids(ctx context.Context, db *sqldb.DB, query string, args []any) ([]string, error) {
	rows, err := sqldb.Query(ctx, db.Read, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// AnyOf negated passes over the values, for none too (on PostgreSQL an absent list would be
// NULL, and NOT (x = ANY(NULL)) selects nothing), and its parameter may stand before one of a
// smaller number (on SQLite a bare ? would take the value of the one after the largest before it).
func TestAnyOfNegatedBeforeAnEarlierParameter(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		if _, err := db.Write.Exec(`CREATE TABLE any_rows (id TEXT PRIMARY KEY, kind TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		if err := sqldb.ExecRows(ctx, db.Write, d, `INSERT INTO any_rows (id, kind) VALUES `, "",
			[][]any{{"r1", "even"}, {"r2", "odd"}, {"r3", "even"}, {"r4", "even"}}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			except []string
			want   []string
		}{{nil, []string{"r1", "r3"}}, {[]string{"r1"}, []string{"r3", "r4"}}} {
			cond, args := sqldb.AnyOf(d, "id", 3, c.except)
			query := `SELECT id FROM any_rows WHERE kind = $1 AND NOT (` + cond + `) ORDER BY id LIMIT $2`
			got, err := ids(ctx, db, query, append([]any{"even", 2}, args...))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("passing over %v: %v, want %v", c.except, got, c.want)
			}
		}
	})
}
