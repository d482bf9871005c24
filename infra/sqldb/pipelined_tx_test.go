package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A WriteTx commits all of its statements or none: a write refused by the database (on PostgreSQL
// only seen when the batch is sent, after the statements queued behind it), or an error of fn,
// leaves nothing; a read sees the writes queued before it; and the connection goes back to the
// pool clean, so the next transaction on it commits.
func TestWriteTxCommitsAllOrNothing(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		// One connection: every transaction below runs on the one the failed ones gave back.
		pool := db.Write
		if d == sqldb.Postgres {
			pool.SetMaxOpenConns(1)
		}
		if _, err := pool.ExecContext(ctx, `CREATE TABLE pipelined (id TEXT PRIMARY KEY, n BIGINT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		count := func() int {
			t.Helper()
			var n int
			if err := db.Read.QueryRow(`SELECT COUNT(*) FROM pipelined`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		err := sqldb.WriteTx(ctx, d, pool, func(tx sqldb.Applier) error {
			for _, id := range []string{"a", "b", "a", "c"} { // the second "a" is refused
				if _, err := tx.ExecContext(ctx, `INSERT INTO pipelined (id, n) VALUES ($1, 1)`, id); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			t.Fatal("a duplicate key committed")
		}
		if n := count(); n != 0 {
			t.Fatalf("%d rows after a refused transaction, want none", n)
		}

		failed := errors.New("the caller's own failure")
		err = sqldb.WriteTx(ctx, d, pool, func(tx sqldb.Applier) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO pipelined (id, n) VALUES ('a', 1)`); err != nil {
				return err
			}
			return failed
		})
		if !errors.Is(err, failed) {
			t.Fatalf("error %v, want the caller's", err)
		}
		if n := count(); n != 0 {
			t.Fatalf("%d rows after a transaction whose caller failed, want none", n)
		}

		var seen int64
		err = sqldb.WriteTx(ctx, d, pool, func(tx sqldb.Applier) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO pipelined (id, n) VALUES ('a', 1), ('b', 2)`); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT SUM(n) FROM pipelined`).Scan(&seen); err != nil {
				return err
			}
			if seen != 3 {
				return fmt.Errorf("the read saw a sum of %d, want 3: the writes queued before it", seen)
			}
			rows, err := tx.Query(ctx, `SELECT id FROM pipelined WHERE id = 'none'`)
			if err != nil {
				return err
			}
			defer rows.Close()
			if rows.Next() {
				return errors.New("a row that does not exist")
			}
			if err := tx.QueryRow(ctx, `SELECT n FROM pipelined WHERE id = 'none'`).Scan(&seen); !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("a missing row is not sql.ErrNoRows: %v", err)
			}
			_, err = tx.ExecContext(ctx, `UPDATE pipelined SET n = n + 10`)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		if err := db.Read.QueryRow(`SELECT SUM(n) FROM pipelined`).Scan(&sum); err != nil || sum != 23 {
			t.Fatalf("sum %d (%v), want 23: the writes queued after the reads committed too", sum, err)
		}
	})
}

// A transaction is reported committed only if it did commit: after a read the database refused,
// which the caller let go, PostgreSQL has aborted the transaction (its COMMIT answers ROLLBACK)
// and WriteTx must say so; SQLite goes on after a failed statement and commits the rest. Either
// way the answer and the table agree.
func TestWriteTxReportsWhatTheDatabaseDid(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		if _, err := db.Write.ExecContext(ctx, `CREATE TABLE reported (id TEXT PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		for _, query := range []string{`SELECT 1 / (SELECT COUNT(*) FROM reported WHERE id = 'none')`, `SELECT no_such_column FROM reported`} {
			if _, err := db.Write.ExecContext(ctx, `DELETE FROM reported`); err != nil {
				t.Fatal(err)
			}
			var readErr error
			err := sqldb.WriteTx(ctx, d, db.Write, func(tx sqldb.Applier) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO reported (id) VALUES ('kept?')`); err != nil {
					return err
				}
				var n int64
				readErr = tx.QueryRow(ctx, query).Scan(&n)
				return nil // the caller lets the read's error go
			})
			var rows int
			if err := db.Read.QueryRow(`SELECT COUNT(*) FROM reported`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if readErr == nil && d == sqldb.Postgres {
				t.Errorf("%s: the read succeeded", query)
			}
			if (err == nil) != (rows == 1) {
				t.Errorf("%s: WriteTx answered %v with %d rows in the table", query, err, rows)
			}
		}
	})
}
