package sqldb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Query and QueryRow answer as the pool does, keep one prepared statement per query text on
// SQLite and none on PostgreSQL (pgx keeps its own), and forget a pool's statements when it
// closes.
func TestPreparedQueries(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		if _, err := db.Write.Exec(`CREATE TABLE prepared_rows (id TEXT PRIMARY KEY, n BIGINT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Write.Exec(`INSERT INTO prepared_rows (id, n) VALUES ('a', 1), ('b', 2), ('c', 3)`); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			rows, err := sqldb.Query(ctx, db.Read, `SELECT id FROM prepared_rows WHERE n > $1 ORDER BY n`, 1)
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
			if len(got) != 2 || got[0] != "b" || got[1] != "c" {
				t.Fatalf("rows %v, want [b c]", got)
			}
			var n int64
			if err := sqldb.QueryRow(ctx, db.Read, `SELECT n FROM prepared_rows WHERE id = $1`, "c").Scan(&n); err != nil || n != 3 {
				t.Fatalf("row %d %v, want 3", n, err)
			}
		}
		want := map[sqldb.Dialect]int{sqldb.SQLite: 2, sqldb.Postgres: 0}[d]
		if got := sqldb.KeptStatements(db.Read); got != want {
			t.Fatalf("%d statements kept, want %d", got, want)
		}
		if err := sqldb.QueryRow(ctx, db.Read, `SELECT n FROM no_such_table WHERE id = $1`, "c").Scan(new(int64)); err == nil {
			t.Fatal("a query of a missing table answered")
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if got := sqldb.KeptStatements(db.Read); got != 0 {
			t.Fatalf("%d statements kept after Close", got)
		}
	})
}

// A statement whose prepare returns after its pool closed (Close forgot the pool's statements
// meanwhile) is closed rather than kept: kept, it would outlive its pool.
func TestAStatementPreparedAsItsPoolClosesIsNotKept(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	const query = `SELECT 1`
	stmt, err := db.Read.Prepare(query)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sqldb.KeepPrepared(db.Read, query, stmt); got != nil {
		t.Fatal("a statement of a closed pool was handed out")
	}
	if got := sqldb.KeptStatements(db.Read); got != 0 {
		t.Fatalf("%d statements kept for a closed pool", got)
	}
	if err := stmt.QueryRow().Scan(new(int)); err == nil {
		t.Fatal("the statement was left open")
	}
}

// Each pool keeps up to its own bound of statements on SQLite: a read pool that met many texts
// (a page's limit is part of its text) leaves the write pool's room alone. PostgreSQL keeps none
// (pgx does).
func TestStatementsAreBoundedForEachPool(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		for n := 1; n <= 600; n++ {
			rows, err := sqldb.Query(ctx, db.Read, fmt.Sprintf(`SELECT 1 LIMIT %d`, n))
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
		bound, one := 512, 1
		if d == sqldb.Postgres {
			bound, one = 0, 0
		}
		if got := sqldb.KeptStatements(db.Read); got != bound {
			t.Fatalf("the read pool keeps %d statements, want %d", got, bound)
		}
		rows, err := sqldb.Query(ctx, db.Write, `SELECT 2`)
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if got := sqldb.KeptStatements(db.Write); got != one {
			t.Fatalf("the write pool keeps %d statements after the read pool's bound was reached, want %d", got, one)
		}
	})
}
