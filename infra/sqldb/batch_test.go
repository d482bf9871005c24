package sqldb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Multi-row statements write every row, across chunks, with the parameters of each dialect, and
// an UPDATE … FROM (VALUES …) RETURNING reports the rows it changed.
func TestMultiRowStatements(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		if got := sqldb.DialectOf(db.Read); got != d {
			t.Fatalf("DialectOf = %s, want %s", got, d)
		}
		if _, err := db.Write.Exec(`CREATE TABLE batch_rows (id TEXT PRIMARY KEY, n BIGINT NOT NULL, note TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		const count = 250 // three chunks
		rows := make([][]any, count)
		for i := range rows {
			rows[i] = []any{fmt.Sprintf("r%03d", i), int64(i), fmt.Sprintf("note %d", i)}
		}
		// In one sqldb.WriteTx: on PostgreSQL the inserts wait in the pipeline until the update's
		// chunks, which read, send them.
		var changed []string
		err := sqldb.WriteTx(ctx, d, db.Write, func(tx sqldb.Applier) error {
			if err := sqldb.ExecRows(ctx, tx, d, `INSERT INTO batch_rows (id, n, note) VALUES `, ` ON CONFLICT (id) DO NOTHING`, rows); err != nil {
				return err
			}
			// Every even row changes; the odd ones name ids that do not exist.
			var updates [][]any
			for i := 0; i < count; i++ {
				id := fmt.Sprintf("r%03d", i)
				if i%2 == 1 {
					id = "missing-" + id
				}
				updates = append(updates, []any{id, int64(i * 10)})
			}
			var err error
			changed, err = sqldb.QueryRowsStrings(ctx, tx, d, `WITH v (id, n) AS (VALUES `,
				`) UPDATE batch_rows SET n = v.n FROM v WHERE batch_rows.id = v.id RETURNING batch_rows.id`, updates, "TEXT", "BIGINT")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(changed) != count/2 {
			t.Fatalf("RETURNING gave %d ids, want %d", len(changed), count/2)
		}
		var n int
		var sum int64
		if err := db.Read.QueryRow(`SELECT COUNT(*), SUM(n) FROM batch_rows`).Scan(&n, &sum); err != nil {
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
			t.Fatalf("%d rows summing to %d, want %d summing to %d", n, sum, count, want)
		}
		var note string
		if err := db.Read.QueryRow(`SELECT note FROM batch_rows WHERE id = 'r249'`).Scan(&note); err != nil || note != "note 249" {
			t.Fatalf("last row's note = %q, %v", note, err)
		}
	})
}
