package eventstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// An append on PostgreSQL locks the persons it writes for against their erasure (erasure_race.go)
// with at most personLockGroups advisory locks, whatever the number of persons: a batch of 256
// upserts held 256 entries of PostgreSQL's shared lock table, which every session shares, until
// its commit. Two persons of one group wait for each other's erasure; persons of other groups do
// not. (SQLite orders them with its one writer: no locks.)
func TestAnAppendTakesAtMostOneLockPerGroupOfPersons(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	ctx := context.Background()
	persons := make([]string, 256)
	for i := range persons {
		persons[i] = fmt.Sprintf("ct_%040d", i)
	}
	for _, lock := range []string{pgLockPersonsShared, pgLockPersons} {
		tx, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, lock, personLock, persons); err != nil {
			t.Fatal(err)
		}
		var held int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`).Scan(&held); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if held < personLockGroups/2 || held > personLockGroups {
			t.Errorf("locking 256 persons took %d advisory locks, want at most %d (and most of them)", held, personLockGroups)
		}
	}
}
