package sqldb_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// SQLite's PRAGMA temp_store: 0 the compiled-in default (files), 1 files, 2 memory.
const tempStoreDefault, tempStoreFile, tempStoreMemory = 0, 1, 2

func tempStore(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) int {
	t.Helper()
	var got int
	if err := q.QueryRowContext(context.Background(), `PRAGMA temp_store`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// SQLite's write connection keeps its statement journals (and temporary tables) in memory, from
// the moment it opens and after migrating; the read pool keeps the default. TempStoreOnDisk puts
// them on disk and its restore back in memory; on PostgreSQL it does nothing and fails nothing.
func TestWriteConnectionKeepsTemporaryStorageInMemory(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db, err := sqldb.Open(ctx, sqldbtest.URL(t, d))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// PRAGMA temp_store is SQLite's alone: on PostgreSQL only the calls' errors are checked.
		check := func(pool *sql.DB, when string, want int) {
			t.Helper()
			if d != sqldb.SQLite {
				return
			}
			if got := tempStore(t, pool); got != want {
				t.Fatalf("%s: temp_store=%d, want %d", when, got, want)
			}
		}
		check(db.Write, "the write connection, opened", tempStoreMemory)
		check(db.Read, "the read pool, opened", tempStoreDefault)
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		check(db.Write, "the write connection, after migrating", tempStoreMemory)

		restore, err := db.TempStoreOnDisk(ctx, db.Write)
		if err != nil {
			t.Fatal(err)
		}
		check(db.Write, "after TempStoreOnDisk", tempStoreFile)
		if err := restore(); err != nil {
			t.Fatal(err)
		}
		check(db.Write, "after its restore", tempStoreMemory)

		// A transaction of derived state (a projection's batch of up to 500 events) journals on
		// disk, an append in memory; each leaves the connection as it found it.
		inTx := func(begin func(context.Context) (*sql.Tx, func(), error), name string, want int) {
			t.Helper()
			tx, release, err := begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d == sqldb.SQLite {
				var got int
				if err := tx.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&got); err != nil || got != want {
					t.Fatalf("in %s: temp_store=%d (%v), want %d", name, got, err, want)
				}
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			release()
			check(db.Write, "after "+name, tempStoreMemory)
		}
		inTx(db.BeginDerivedTx, "a derived transaction", tempStoreFile)
		if d == sqldb.SQLite { // appends on PostgreSQL run through pgx (eventstore), not BeginAppendTx
			inTx(db.BeginAppendTx, "an append transaction", tempStoreMemory)
		}
	})
}

// Migrations run with SQLite's temporary storage on disk (migration 8 updates every event in one
// transaction: its statement journal is as large as the log), and the write connection has it
// back in memory afterwards, also when a migration fails. What the migration saw is recorded by a
// trigger on the table it updates: SQLite's own view from inside its transaction. SQLite only:
// the setting is SQLite's.
func TestMigrationsRunWithTemporaryStorageOnDisk(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger string
		fails   bool
	}{
		{"applied", `CREATE TRIGGER seen AFTER UPDATE ON events
			BEGIN INSERT INTO temp_store_seen SELECT temp_store FROM pragma_temp_store(); END`, false},
		{"failed", `CREATE TRIGGER refused BEFORE UPDATE ON events
			BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := sqldbtest.Open(t, sqldb.SQLite)
			// Back before migration 8, with an event it updates and the test's trigger.
			if err := db.MigrateDownTo(ctx, 7); err != nil {
				t.Fatal(err)
			}
			for _, stmt := range []string{
				`INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
				 VALUES (1, 'ev_1', 'sub_1', 1, 'SubscriptionStarted', 1, 0, 'acc_1', '{}', '{}')`,
				`CREATE TABLE temp_store_seen (temp_store INTEGER NOT NULL)`,
				tc.trigger,
			} {
				if _, err := db.Write.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}

			done, err := db.Migrate(ctx)
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), "refused by the test") {
					t.Fatalf("migrate: %v, want migration 8 refused by the trigger", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if len(done.Applied) == 0 || done.Applied[0] != "00008_events_by_subscription.go" {
					t.Fatalf("applied %v, want migration 8 first", done.Applied)
				}
				var seen []int
				rows, err := db.Write.QueryContext(ctx, `SELECT temp_store FROM temp_store_seen`)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var v int
					if err := rows.Scan(&v); err != nil {
						t.Fatal(err)
					}
					seen = append(seen, v)
				}
				if err := rows.Close(); err != nil {
					t.Fatal(err)
				}
				if len(seen) == 0 {
					t.Fatal("migration 8 updated no event: the test sees nothing")
				}
				for _, v := range seen {
					if v != tempStoreFile {
						t.Fatalf("migration 8 ran with temp_store=%v, want %d (files) throughout", seen, tempStoreFile)
					}
				}
			}
			if got := tempStore(t, db.Write); got != tempStoreMemory {
				t.Fatalf("after migrating (error: %v) the write connection has temp_store=%d, want %d (memory)", err, got, tempStoreMemory)
			}
		})
	}
}
