package sqldb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Multi-row statements write every row, across chunks, with the parameters of each dialect, and
// an UPDATE … FROM (VALUES …) RETURNING reports the rows it changed: a few rows (on SQLite run as
// a one-row statement per row) and three chunks, in a transaction of sqldb.WriteTx, of
// BeginDerivedTx through DB.Applier, and of database/sql. On SQLite the first two keep the one-row
// statements for the write pool: every size of fewer than a chunk's rows runs the same two
// statements, parsed once.
func TestMultiRowStatements(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		if got := sqldb.DialectOf(db.Read); got != d {
			t.Fatalf("DialectOf = %s, want %s", got, d)
		}
		kept := sqldb.KeptStatements(db.Write)
		for _, count := range []int{1, 7, 99, 250} {
			for _, in := range []string{"write", "derived", "plain"} {
				writeAndUpdate(t, db, d, count, in)
			}
		}
		if got, want := sqldb.KeptStatements(db.Write)-kept, map[sqldb.Dialect]int{sqldb.SQLite: 4, sqldb.Postgres: 0}[d]; got != want {
			t.Errorf("%d statements kept for the pool, want %d (the insert's and the update's of one row, of each table written by a transaction that keeps them)", got, want)
		}
	})
}

// writeAndUpdate inserts count rows (ids of their own) into the table of its kind of transaction (in), then changes every even one
// through an UPDATE … FROM (VALUES …) whose odd rows name ids that do not exist, in one
// transaction (sqldb.WriteTx, BeginDerivedTx, or plain database/sql), and checks what it returned and wrote. In a
// WriteTx on PostgreSQL the inserts wait in the pipeline until the update's chunks, which read,
// send them.
func writeAndUpdate(t *testing.T, db *sqldb.DB, d sqldb.Dialect, count int, in string) {
	t.Helper()
	ctx := context.Background()
	table := "batch_rows_" + in
	if _, err := db.Write.Exec(`CREATE TABLE IF NOT EXISTS ` + table + ` (id TEXT PRIMARY KEY, n BIGINT NOT NULL, note TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	idOf := func(i int) string { return fmt.Sprintf("c%d-r%03d", count, i) }
	rows := make([][]any, count)
	for i := range rows {
		rows[i] = []any{idOf(i), int64(i), fmt.Sprintf("note %d", i)}
	}
	var changed []string
	write := func(tx sqldb.Applier) error {
		if err := sqldb.ExecRows(ctx, tx, d, `INSERT INTO `+table+` (id, n, note) VALUES `, ` ON CONFLICT (id) DO NOTHING`, rows); err != nil {
			return err
		}
		var updates [][]any
		for i := 0; i < count; i++ {
			id := idOf(i)
			if i%2 == 1 {
				id = "missing-" + id
			}
			updates = append(updates, []any{id, int64(i * 10)})
		}
		var err error
		changed, err = sqldb.QueryRowsStrings(ctx, tx, d, `WITH v (id, n) AS (VALUES `,
			`) UPDATE `+table+` SET n = v.n FROM v WHERE `+table+`.id = v.id RETURNING `+table+`.id`, updates, "TEXT", "BIGINT")
		return err
	}
	switch in {
	case "write":
		if err := sqldb.WriteTx(ctx, d, db.Write, write); err != nil {
			t.Fatal(err)
		}
	case "derived":
		tx, release, err := db.BeginDerivedTx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if err := write(db.Applier(tx)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	default:
		tx, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := write(sqldb.ApplierOf(tx)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if len(changed) != (count+1)/2 {
		t.Fatalf("%s, %d rows: RETURNING gave %d ids, want %d", table, count, len(changed), (count+1)/2)
	}
	var n int
	var sum int64
	if err := db.Read.QueryRow(`SELECT COUNT(*), SUM(n) FROM `+table+` WHERE id LIKE $1`, fmt.Sprintf("c%d-%%", count)).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for i := 0; i < count; i++ {
		if i%2 == 0 {
			want += int64(i * 10)
		} else {
			want += int64(i)
		}
	}
	if n != count || sum != want {
		t.Fatalf("%s, %d rows: %d rows summing to %d, want %d summing to %d", table, count, n, sum, count, want)
	}
	last := count - 1
	var note string
	if err := db.Read.QueryRow(`SELECT note FROM `+table+` WHERE id = $1`, idOf(last)).Scan(&note); err != nil || note != fmt.Sprintf("note %d", last) {
		t.Fatalf("%s, %d rows: last row's note = %q, %v", table, count, note, err)
	}
}
