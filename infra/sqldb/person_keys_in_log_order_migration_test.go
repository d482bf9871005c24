package sqldb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Migration 29 moves the persons' keys into person_key_rows, keyed by their contacts' first
// events. Keys stored before it (here: sealed by the store, then the migration undone, which
// puts them back in the person_keys table as releases before it kept them) open their contacts'
// values after it, an erased contact stays erased, and the store goes on: a new contact's key,
// another erasure. Applied again, it changes nothing.
func TestPersonKeysInLogOrderMigrationKeepsEveryKey(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		_, server := sealingtest.NewKey(t)
		store := eventstore.New(db)
		t.Cleanup(store.Close)
		store.SealPersonalData(server)
		meta := domain.Metadata{AccountID: "acc_1", Actor: string(domain.OperatorActor)}
		create := func(id string) {
			t.Helper()
			created := domain.ContactCreated{ContactID: id, AccountID: "acc_1", Email: id + "@example.com", FirstName: "Kept-" + id}
			if _, err := store.Append(ctx, meta, domain.StreamAppend{StreamID: id, Events: []domain.Event{created}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"ct_live", "ct_gone", "ct_other"} {
			create(id)
		}
		erase := func(id string) {
			t.Helper()
			if _, err := store.Append(ctx, meta, domain.StreamAppend{StreamID: id, ExpectedVersion: 1, Events: []domain.Event{domain.ContactErased{ContactID: id, AccountID: "acc_1"}}}); err != nil {
				t.Fatal(err)
			}
		}
		erase("ct_gone")
		if err := db.MigrateDownTo(ctx, 28); err != nil {
			t.Fatal(err)
		}
		var oldRows int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM person_keys`).Scan(&oldRows); err != nil || oldRows != 3 {
			t.Fatalf("keys in the person_keys table before migration 29: %d %v, want 3", oldRows, err)
		}

		for range 2 { // and applied again: nothing changes
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			var rows int
			if err := db.Read.QueryRow(`SELECT COUNT(*) FROM person_key_rows`).Scan(&rows); err != nil || rows != 3 {
				t.Fatalf("keys in person_key_rows after migration 29: %d %v, want 3", rows, err)
			}
			var misplaced int
			if err := db.Read.QueryRow(`SELECT COUNT(*) FROM person_key_rows k
				WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.position = k.first_position AND e.stream_id = k.contact_id AND e.version = 1)`).Scan(&misplaced); err != nil || misplaced != 0 {
				t.Fatalf("keys not at their contact's first event: %d %v", misplaced, err)
			}
			if _, err := db.Write.Exec(`DELETE FROM goose_db_version WHERE version_id = 29`); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}

		readable := func(id string) bool {
			t.Helper()
			events, err := store.ReadStream(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return strings.Contains(string(events[0].Data), "Kept-"+id)
		}
		if !readable("ct_live") || !readable("ct_other") {
			t.Error("a live contact's values do not open after migration 29")
		}
		if readable("ct_gone") {
			t.Error("an erased contact's values open after migration 29")
		}
		if erased, err := store.Erased(ctx, "ct_gone"); err != nil || !erased {
			t.Errorf("the erased contact after migration 29: erased %v, %v", erased, err)
		}
		create("ct_new")
		erase("ct_other")
		if !readable("ct_new") || readable("ct_other") || !readable("ct_live") {
			t.Error("after migration 29, a new contact's values do not open, or an erased one's do, or a live one's do not")
		}
	})
}

// A key whose contact has no first event cannot be found by its contact after migration 29: the
// migration refuses to run, naming how many, and changes nothing, rather than drop the key.
func TestPersonKeysInLogOrderMigrationRefusesAKeyWithoutItsContact(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		if err := db.MigrateDownTo(ctx, 28); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Write.Exec(`INSERT INTO person_keys (contact_id, account_id, sealed_key) VALUES ('ct_nowhere', 'acc_1', 'v1.key')`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "1 of the 1 persons' keys name a contact whose first event is not in the log") {
			t.Fatalf("migrate with a key of no contact: %v, want a refusal", err)
		}
		var kept string
		if err := db.Read.QueryRow(`SELECT sealed_key FROM person_keys WHERE contact_id = 'ct_nowhere'`).Scan(&kept); err != nil || kept != "v1.key" {
			t.Fatalf("the key after the refusal: %q %v, want it as it was", kept, err)
		}
		var version int64
		if err := db.Read.QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&version); err != nil || version != 28 {
			t.Fatalf("the schema after the refusal: %d %v, want 28", version, err)
		}
	})
}

// On PostgreSQL a process of an earlier release may still be running when migration 29 starts:
// its erasure, committed while the migration copies the keys, must not be lost with the old
// table (the key copied live, the erased values readable again). The migration locks the table
// first, so that erasure commits before the copy reads it.
func TestPersonKeysInLogOrderMigrationKeepsAnErasureCommittedMeanwhile(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	store := contactBefore29(t, db, "ct_gone")
	older, err := db.Write.BeginTx(ctx, nil) // an earlier release's erasing append, not committed yet
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback()
	if _, err := older.ExecContext(ctx, `INSERT INTO person_keys (contact_id, account_id, sealed_key, erased_at) VALUES ('ct_gone', 'acc_1', NULL, 1)
		ON CONFLICT (contact_id) DO UPDATE SET sealed_key = NULL, erased_at = excluded.erased_at`); err != nil {
		t.Fatal(err)
	}
	migrated := make(chan error, 1)
	go func() { _, err := db.Migrate(ctx); migrated <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for waiting := false; !waiting; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("migration 29 never waited for the older process's transaction")
		}
		if err := db.Read.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := older.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-migrated; err != nil {
		t.Fatal(err)
	}
	if erased, err := store.Erased(ctx, "ct_gone"); err != nil || !erased {
		t.Fatalf("the contact erased during migration 29: erased %v, %v", erased, err)
	}
	events, err := store.ReadStream(ctx, "ct_gone")
	if err != nil || strings.Contains(string(events[0].Data), "Kept-ct_gone") {
		t.Fatalf("the contact erased during migration 29 reads %s, %v", events[0].Data, err)
	}
}

// An append of an earlier release reads person_keys (its erasure check) in its first round trip
// and writes a key in its second; migration 29 starts in between. Neither may fail on a deadlock
// (the migration's lock, granted between the two, and the older write waiting on it, while the
// DROP waits on the older read), and the older write, committed, is copied.
func TestPersonKeysInLogOrderMigrationBesideAnOlderAppendBetweenItsRoundTrips(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	store := contactBefore29(t, db, "ct_a")
	older, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback()
	var n int
	if err := older.QueryRowContext(ctx, `SELECT COUNT(*) FROM person_keys WHERE contact_id = ANY($1) AND sealed_key IS NULL`, []string{"ct_a"}).Scan(&n); err != nil {
		t.Fatal(err)
	}
	migrated := make(chan error, 1)
	go func() { _, err := db.Migrate(ctx); migrated <- err }()
	time.Sleep(300 * time.Millisecond) // the migration has asked for its lock
	if _, err := older.ExecContext(ctx, `INSERT INTO person_keys (contact_id, account_id, sealed_key, erased_at) VALUES ('ct_a', 'acc_1', NULL, 1)
		ON CONFLICT (contact_id) DO UPDATE SET sealed_key = NULL, erased_at = excluded.erased_at`); err != nil {
		t.Fatalf("the older append's erasure beside migration 29: %v", err)
	}
	if err := older.Commit(); err != nil {
		t.Fatalf("the older append's commit beside migration 29: %v", err)
	}
	if err := <-migrated; err != nil {
		t.Fatalf("migration 29 beside an older append: %v", err)
	}
	if erased, err := store.Erased(ctx, "ct_a"); err != nil || !erased {
		t.Fatalf("the erasure the older append committed: erased %v, %v", erased, err)
	}
}

// contactBefore29 creates a contact whose values a store seals, then undoes migration 29 (its key
// back in the person_keys table, as an earlier release keeps it), and returns the store.
func contactBefore29(t *testing.T, db *sqldb.DB, contactID string) *eventstore.Store {
	t.Helper()
	ctx := context.Background()
	_, server := sealingtest.NewKey(t)
	store := eventstore.New(db)
	t.Cleanup(store.Close)
	store.SealPersonalData(server)
	meta := domain.Metadata{AccountID: "acc_1", Actor: string(domain.OperatorActor)}
	created := domain.ContactCreated{ContactID: contactID, AccountID: "acc_1", Email: contactID + "@example.com", FirstName: "Kept-" + contactID}
	if _, err := store.Append(ctx, meta, domain.StreamAppend{StreamID: contactID, Events: []domain.Event{created}}); err != nil {
		t.Fatal(err)
	}
	if err := db.MigrateDownTo(ctx, 28); err != nil {
		t.Fatal(err)
	}
	return store
}
