package sqldb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Unavailable tells a database that cannot answer now from a statement that is wrong, on real
// errors of both databases.
func TestUnavailableTellsOutagesFromMistakes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("postgres", func(t *testing.T) {
		db := sqldbtest.Open(t, sqldb.Postgres)
		_, syntax := db.Read.ExecContext(ctx, `SELEC 1`)
		_, missing := db.Read.ExecContext(ctx, `SELECT * FROM no_such_table`)
		closed, err := sql.Open("pgx", "postgres://postgres@127.0.0.1:1/test?connect_timeout=2")
		if err != nil {
			t.Fatal(err)
		}
		defer closed.Close()
		refused := closed.PingContext(ctx)
		for name, c := range map[string]struct {
			err  error
			want bool
		}{
			"a syntax error": {syntax, false}, "a missing table": {missing, false}, "a refused connection": {refused, true},
		} {
			if c.err == nil || sqldb.Unavailable(c.err) != c.want {
				t.Errorf("%s (%v): Unavailable = %v, want %v", name, c.err, !c.want, c.want)
			}
		}
	})

	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "busy.db")
		holder, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(wal)")
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if _, err := holder.ExecContext(ctx, `CREATE TABLE t (x INTEGER PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		lock, err := holder.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Rollback()
		if _, err := lock.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, busy := other.ExecContext(ctx, `INSERT INTO t VALUES (2)`)
		_, duplicate := holder.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`)
		if busy == nil || !sqldb.Unavailable(busy) {
			t.Errorf("a write to a locked file (%v) is not unavailable", busy)
		}
		if duplicate == nil || sqldb.Unavailable(duplicate) {
			t.Errorf("a statement refused for itself (%v) is unavailable", duplicate)
		}
	})
	if sqldb.Unavailable(nil) {
		t.Error("no error is unavailable")
	}
}
