package sqldb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// InsertUnnest (PostgreSQL only) writes every row in one statement of column arrays, upserting
// through its tail, and refuses, writing nothing, rows with a value of a type it cannot send as
// an array.
func TestInsertUnnest(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	if _, err := db.Write.Exec(`CREATE TABLE unnest_rows (id TEXT PRIMARY KEY, n INTEGER NOT NULL, big BIGINT NOT NULL, ok BOOLEAN NOT NULL, note TEXT)`); err != nil {
		t.Fatal(err)
	}
	rows := make([][]any, 1000)
	for i := range rows {
		rows[i] = []any{fmt.Sprintf("r%04d", i), int64(i), int64(i) << 40, i%2 == 0, fmt.Sprintf("note %d", i)}
	}
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	head := `INSERT INTO unnest_rows (id, n, big, ok, note)`
	for range 2 { // the second time, every row is a conflict
		done, err := sqldb.InsertUnnest(ctx, tx, head, `ON CONFLICT (id) DO UPDATE SET n = unnest_rows.n + 1`, rows)
		if err != nil || !done {
			t.Fatalf("InsertUnnest: %v, %v", done, err)
		}
	}
	var count, sum, wrong int64
	var last string
	if err := tx.QueryRow(`SELECT COUNT(*), SUM(n), COUNT(*) FILTER (WHERE big <> ((n::bigint - 1) << 40) OR ok <> ((n - 1) % 2 = 0)), MAX(note) FROM unnest_rows`).Scan(&count, &sum, &wrong, &last); err != nil {
		t.Fatal(err)
	}
	// n was i, then i+1 after the conflict; big and ok still those of i.
	if count != 1000 || sum != 999*1000/2+1000 || wrong != 0 || last != "note 999" {
		t.Fatalf("%d rows, sum %d, %d rows with a wrong big or ok, max note %q", count, sum, wrong, last)
	}
	rows[500][4] = nil // a NULL: not an array of text InsertUnnest knows
	done, err := sqldb.InsertUnnest(ctx, tx, head, `ON CONFLICT (id) DO NOTHING`, append(rows, []any{"new", int64(1), int64(1), true, nil}))
	if err != nil || done {
		t.Fatalf("InsertUnnest of a row with a NULL: done %v, %v; want it refused", done, err)
	}
}
