package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A swap writes only the rows of a rebuilt table that differ from the live ones: none for an
// unchanged table; a deleted, an updated and an inserted row for a table with one of each (NULLs
// compared as values). Where that cannot work (two rows trade a value of another unique index),
// every row is replaced. The live table ends as the copy every time.
func TestReplaceRowsWritesOnlyWhatDiffers(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		conn, err := db.Write.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		live, err := liveSchema(ctx, conn, d)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string) {
			t.Helper()
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		exec(`CREATE TABLE swap_rows (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL UNIQUE, note TEXT)`)
		exec(`CREATE TEMP TABLE swap_rows (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL UNIQUE, note TEXT)`)
		rows := func(schema string) []string {
			t.Helper()
			res, err := conn.QueryContext(ctx, fmt.Sprintf(`SELECT id, name, COALESCE(note, '<null>') FROM %s.swap_rows ORDER BY id`, schema))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			var out []string
			for res.Next() {
				var id, name, note string
				if err := res.Scan(&id, &name, &note); err != nil {
					t.Fatal(err)
				}
				out = append(out, id+" "+name+" "+note)
			}
			return out
		}
		temp := "temp"
		if d == sqldb.Postgres {
			temp = "pg_temp"
		}
		swap := func(liveRows, copyRows string, wantWritten int64) {
			t.Helper()
			exec(`DELETE FROM ` + live + `.swap_rows`)
			exec(`DELETE FROM ` + temp + `.swap_rows`)
			exec(`INSERT INTO ` + live + `.swap_rows VALUES ` + liveRows)
			exec(`INSERT INTO ` + temp + `.swap_rows VALUES ` + copyRows)
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			written, err := replaceRows(ctx, tx, d, live, "swap_rows")
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil && err != sql.ErrTxDone {
				t.Fatal(err)
			}
			if got, want := rows(live), rows(temp); !slices.Equal(got, want) {
				t.Fatalf("live rows %v, the copy's %v", got, want)
			}
			if written != wantWritten {
				t.Fatalf("wrote %d rows, want %d", written, wantWritten)
			}
		}
		swap(`('1', 'a', NULL), ('2', 'b', 'x')`, `('1', 'a', NULL), ('2', 'b', 'x')`, 0)
		swap(`('1', 'a', NULL), ('2', 'b', 'x'), ('9', 'z', NULL)`, `('1', 'a', NULL), ('2', 'b', NULL), ('3', 'c', 'y')`, 3)
		swap(`('1', 'a', NULL), ('2', 'b', NULL)`, `('1', 'b', NULL), ('2', 'a', NULL)`, 4) // traded names: replaced
	})
}
