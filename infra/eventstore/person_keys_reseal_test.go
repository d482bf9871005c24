package eventstore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// rotatedSealer is the sealer of FUNNEL_SECRET_KEY=keys (a comma-separated list, the first seals).
func rotatedSealer(t *testing.T, keys string) *sealing.Sealer {
	t.Helper()
	parsed, err := sealing.ParseKeys(keys)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sealing.New(parsed...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sealedKeyOf is a contact's row of person_keys: its sealed key, and whether it is erased.
func sealedKeyOf(t *testing.T, db *sqldb.DB, contactID string) (string, bool) {
	t.Helper()
	var sealed *string
	var erasedAt *int64
	if err := db.Read.QueryRowContext(context.Background(), `SELECT sealed_key, erased_at FROM person_keys WHERE contact_id = $1`, contactID).Scan(&sealed, &erasedAt); err != nil {
		t.Fatal(err)
	}
	if sealed == nil {
		return "", erasedAt != nil
	}
	return *sealed, erasedAt != nil
}

// A contact erased while the keys are sealed again after a rotation stays erased: a batch that
// read its key before the erasure destroyed it does not write it back, and its values stay null;
// the other contact's key is sealed with the new server key, and its values open without the old
// one. The erasure commits between the batch's read and its write without waiting: the read holds
// no lock, and on SQLite not the one writer (a pass over a table with nothing left to seal again
// reads all of it, and every append would wait for it).
func TestAResealRacingAnErasureDoesNotResurrectTheKey(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		oldKey, oldSealer := sealingtest.NewKey(t)
		newKey, _ := sealingtest.NewKey(t)
		before := eventstore.New(db)
		t.Cleanup(before.Close)
		before.SealPersonalData(oldSealer)
		for _, id := range []string{"ct_erased", "ct_kept"} {
			if _, err := before.Append(ctx, meta, domain.StreamAppend{StreamID: id, Events: []domain.Event{
				domain.ContactCreated{ContactID: id, AccountID: "acc_test", Email: id + "@example.com"}}}); err != nil {
				t.Fatal(err)
			}
		}

		rotated := rotatedSealer(t, newKey+","+oldKey)
		during := eventstore.New(db)
		t.Cleanup(during.Close)
		during.SealPersonalData(rotated)
		erased := make(chan error, 1)
		*eventstore.AfterResealRead = func() {
			*eventstore.AfterResealRead = nil
			go func() {
				_, err := during.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_erased", ExpectedVersion: 1,
					Events: []domain.Event{domain.ContactErased{ContactID: "ct_erased", AccountID: "acc_test", ErasedAt: time.Now()}}})
				erased <- err
			}()
			select {
			case err := <-erased:
				erased <- err
			case <-time.After(10 * time.Second):
				t.Error("the erasure waited for the reseal's read to end")
			}
		}
		t.Cleanup(func() { *eventstore.AfterResealRead = nil })
		did, err := eventstore.ResealPersonKeys(ctx, db, rotated)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-erased; err != nil {
			t.Fatalf("the erasure: %v", err)
		}
		if sealed, isErased := sealedKeyOf(t, db, "ct_erased"); sealed != "" || !isErased {
			t.Fatalf("the erased contact's key after the reseal: %q (erased %v), want none", sealed, isErased)
		}
		newID := rotated.KeyIDs()[0]
		if sealed, _ := sealedKeyOf(t, db, "ct_kept"); !strings.HasPrefix(sealed, "v1."+newID+".") {
			t.Fatalf("the kept contact's key is %q, want it sealed with %s (%+v)", sealed, newID, did)
		}

		// OLD dropped: the kept contact's values open, the erased one's read null.
		after := eventstore.New(db)
		t.Cleanup(after.Close)
		after.SealPersonalData(rotatedSealer(t, newKey))
		for id, want := range map[string]any{"ct_kept": "ct_kept@example.com", "ct_erased": nil} {
			events, err := after.ReadContactHistory(ctx, "acc_test", id, 0, 10)
			if err != nil {
				t.Fatalf("history of %s without the old key: %v", id, err)
			}
			var data map[string]any
			if err := json.Unmarshal(events[0].Data, &data); err != nil {
				t.Fatal(err)
			}
			if data["email"] != want {
				t.Errorf("%s reads email %v, want %v", id, data["email"], want)
			}
		}

		// Again: nothing left to do.
		if again, err := eventstore.ResealPersonKeys(ctx, db, rotated); err != nil || again != (eventstore.Resealed{}) {
			t.Fatalf("a second reseal: %+v, %v", again, err)
		}
	})
}

// A reseal that meets a key another transaction holds passes over it (PostgreSQL: waiting could
// deadlock with an erasing append) and is not done until that key is sealed again too: that
// transaction may roll back, and "done" is the signal that the old server key may be dropped.
// (PostgreSQL only: on SQLite no other transaction holds a row while this one writes.)
func TestAResealIsNotDoneWhileAKeyItPassedOverIsLeft(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	oldKey, oldSealer := sealingtest.NewKey(t)
	newKey, _ := sealingtest.NewKey(t)
	before := eventstore.New(db)
	t.Cleanup(before.Close)
	before.SealPersonalData(oldSealer)
	if _, err := before.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_held", Events: []domain.Event{
		domain.ContactCreated{ContactID: "ct_held", AccountID: "acc_test", Email: "held@example.com"}}}); err != nil {
		t.Fatal(err)
	}
	// Another process's batch holds the row, then rolls back.
	held, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.ExecContext(ctx, `SELECT 1 FROM person_key_rows WHERE contact_id = 'ct_held' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = held.Rollback()
	}()
	rotated := rotatedSealer(t, newKey+","+oldKey)
	if _, err := eventstore.ResealPersonKeys(ctx, db, rotated); err != nil {
		t.Fatal(err)
	}
	if sealed, _ := sealedKeyOf(t, db, "ct_held"); !strings.HasPrefix(sealed, "v1."+rotated.KeyIDs()[0]+".") {
		t.Fatalf("the reseal was done with the held key still sealed with the old server key: %q", sealed)
	}
}

// A key that a process still sealing with the old server key stores while a pass finds nothing
// left is sealed again before the reseal is done: "done" is the signal that the old key may be
// dropped, and that key would open with none.
func TestAKeyStoredWithTheOldKeyDuringAPassIsSealedAgain(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		oldKey, oldSealer := sealingtest.NewKey(t)
		newKey, _ := sealingtest.NewKey(t)
		oldProcess := eventstore.New(db)
		t.Cleanup(oldProcess.Close)
		oldProcess.SealPersonalData(oldSealer)
		rotated := rotatedSealer(t, newKey+","+oldKey)
		stored := make(chan error, 1)
		*eventstore.AfterResealRead = func() {
			*eventstore.AfterResealRead = nil
			_, err := oldProcess.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_late", Events: []domain.Event{
				domain.ContactCreated{ContactID: "ct_late", AccountID: "acc_test", Email: "late@example.com"}}})
			stored <- err
		}
		t.Cleanup(func() { *eventstore.AfterResealRead = nil })
		if _, err := eventstore.ResealPersonKeys(ctx, db, rotated); err != nil {
			t.Fatal(err)
		}
		if err := <-stored; err != nil {
			t.Fatal(err)
		}
		if sealed, _ := sealedKeyOf(t, db, "ct_late"); !strings.HasPrefix(sealed, "v1."+rotated.KeyIDs()[0]+".") {
			t.Errorf("the reseal was done with a key stored during it still sealed with the old server key: %q", sealed)
		}
	})
}

// A reseal beside an append that erases two persons, whose transaction holds their keys' rows in
// its own order, does not wait for it (PostgreSQL aborted one of the two as a deadlock when the
// reseal's update waited): the reseal seals the other keys, comes back to the erased ones, and
// both go through.
func TestAResealDoesNotDeadlockWithABatchErasingTwoPersons(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	oldKey, oldSealer := sealingtest.NewKey(t)
	newKey, _ := sealingtest.NewKey(t)
	before := eventstore.New(db)
	t.Cleanup(before.Close)
	before.SealPersonalData(oldSealer)
	for _, id := range []string{"ct_a", "ct_b"} {
		if _, err := before.Append(ctx, meta, domain.StreamAppend{StreamID: id, Events: []domain.Event{
			domain.ContactCreated{ContactID: id, AccountID: "acc_test", Email: id + "@example.com"}}}); err != nil {
			t.Fatal(err)
		}
	}
	rotated := rotatedSealer(t, newKey+","+oldKey)
	// The erasing batch's statements (eraseKeys): ct_b's key first, then ct_a's.
	eraser, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eraser.Rollback()
	erased := make(chan error, 1)
	*eventstore.AfterResealRead = func() {
		*eventstore.AfterResealRead = nil
		if _, err := eraser.ExecContext(ctx, eventstore.EraseKey, "ct_b", "acc_test", 1); err != nil {
			t.Error(err)
		}
		go func() {
			// Once the reseal's update has sealed ct_a again, or waits for ct_b's row, the batch
			// goes on to ct_a.
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				var moved bool
				_ = db.Read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM person_keys WHERE contact_id = 'ct_a' AND sealed_key LIKE $1)
					OR EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
						AND query LIKE '%UPDATE person_key_rows SET sealed_key = v.column3%')`, "v1."+rotated.KeyIDs()[0]+".%").Scan(&moved)
				if moved {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if _, err := eraser.ExecContext(ctx, eventstore.EraseKey, "ct_a", "acc_test", 1); err != nil {
				erased <- err
				return
			}
			erased <- eraser.Commit()
		}()
	}
	t.Cleanup(func() { *eventstore.AfterResealRead = nil })
	_, resealErr := eventstore.ResealPersonKeys(ctx, db, rotated)
	eraseErr := <-erased
	if resealErr != nil || eraseErr != nil {
		t.Errorf("a reseal beside a batch erasing two persons: reseal %v; erasing batch %v; want both to go through", resealErr, eraseErr)
	}
	for _, id := range []string{"ct_a", "ct_b"} {
		if sealed, isErased := sealedKeyOf(t, db, id); sealed != "" || !isErased {
			t.Errorf("%s after the erasure: key %q (erased %v), want none", id, sealed, isErased)
		}
	}
}
