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
	for _, erased := range [][]string{nil, {persons[7]}} {
		tx, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if erased == nil {
			_, err = tx.ExecContext(ctx, pgLockPersonsShared, personLock, persons)
		} else {
			_, err = tx.ExecContext(ctx, pgLockPersons, personLock, persons, erased)
		}
		if err != nil {
			t.Fatal(err)
		}
		var held, exclusive int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE mode = 'ExclusiveLock') FROM pg_locks
			WHERE locktype = 'advisory' AND pid = pg_backend_pid()`).Scan(&held, &exclusive); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if held < personLockGroups/2 || held > personLockGroups {
			t.Errorf("locking 256 persons took %d advisory locks, want at most %d (and most of them)", held, personLockGroups)
		}
		if exclusive != len(erased) {
			t.Errorf("locking 256 persons, %d of them erased: %d locks exclusive, want the erased persons' groups, %d", len(erased), exclusive, len(erased))
		}
	}
}

// An erasure's lock excludes the writes of its person and of the other persons of its group, and
// no other: a write for a person of another group goes on, even beside a batch that erases one
// person among 256 (the other persons of the batch locked shared).
func TestAnErasureHoldsUpTheWritesOfItsPersonsGroupOnly(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	ctx := context.Background()
	group := func(id string) int {
		var h int
		if err := db.Read.QueryRow(`SELECT hashtext($1) & $2`, id, personLockGroups-1).Scan(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	erased := "ct_erased"
	var sameGroup, otherGroup string
	var batch []string // 256 persons, none of the erased person's group but itself
	for i := 0; sameGroup == "" || otherGroup == "" || len(batch) < 255; i++ {
		id := fmt.Sprintf("ct_%d", i)
		switch {
		case group(id) == group(erased):
			if sameGroup == "" {
				sameGroup = id
			}
		case otherGroup == "":
			otherGroup = id
		case len(batch) < 255:
			batch = append(batch, id)
		}
	}
	batch = append(batch, erased)
	for name, persons := range map[string][]string{"alone": {erased}, "in a batch": batch} {
		t.Run(name, func(t *testing.T) {
			eraser, err := db.Write.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer eraser.Rollback()
			if _, err := eraser.ExecContext(ctx, pgLockPersons, personLock, persons, []string{erased}); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				person string
				waits  bool
			}{{erased, true}, {sameGroup, true}, {otherGroup, false}} {
				tx, err := db.Write.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '200ms'`); err != nil {
					t.Fatal(err)
				}
				_, err = tx.ExecContext(ctx, pgLockPersonsShared, personLock, []string{c.person})
				tx.Rollback()
				if waited := err != nil; waited != c.waits {
					t.Errorf("a write for %s beside the erasure of %s: waited %v (%v), want %v", c.person, erased, waited, err, c.waits)
				}
			}
		})
	}
}
