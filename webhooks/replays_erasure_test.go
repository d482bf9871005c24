package webhooks

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A replay's batch that carries the values of a person erased since its page was read records
// nothing, deliveries and progress alike, and names the person, for the page to be read again;
// one that carries only live persons, or none, records as usual.
func TestAReplayBatchOfAPersonErasedSinceItsReadRecordsNothing(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		r := replays{db: db}
		claim := ReplayClaim.Milliseconds()
		row := replayRow{id: "rpl_1", accountID: "acc_1", subscriptionID: "whk_1", since: time.UnixMilli(1)}
		if _, created, err := r.create(ctx, row, "A", 1000, 1000+claim); err != nil || !created {
			t.Fatalf("create: %v %v", created, err)
		}
		for _, q := range []string{ // each key belongs to its contact's first event
			`INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
			 VALUES (1, 'evt_live', 'ct_live', 1, 'ContactCreated', 1, 0, 'acc_1', '{}', '{}'), (2, 'evt_erased', 'ct_erased', 1, 'ContactCreated', 1, 0, 'acc_1', '{}', '{}')`,
			`INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key, erased_at)
			 VALUES (1, 'ct_live', 'acc_1', 'v1.key', NULL), (2, 'ct_erased', 'acc_1', NULL, 5)`,
		} {
			if _, err := db.Write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		delivery := func(id string, position int64) []any {
			return []any{id, "acc_1", "whk_1", "evt_" + id, "form.submitted", position, "", "{}", 0, "pending", 0, 10, 0, 0, 0, "", 0, 0}
		}
		b := func(upTo int64, persons ...string) batch {
			return batch{deliveries: [][]any{delivery("d", upTo)}, upTo: upTo, now: 2000, claimedUntil: 2000 + claim, accountID: "acc_1", persons: persons}
		}
		var since erasedSinceRead
		if err := r.commit(ctx, "rpl_1", "A", b(5, "ct_live", "ct_erased")); !errors.As(err, &since) || !slices.Equal(since.persons, []string{"ct_erased"}) {
			t.Fatalf("a batch carrying an erased person: %v, want erasedSinceRead naming ct_erased", err)
		}
		var deliveries int
		if err := db.Write.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries`).Scan(&deliveries); err != nil {
			t.Fatal(err)
		}
		if got, err := r.get(ctx, "rpl_1"); err != nil || got.upTo != 0 || got.count != 0 || deliveries != 0 {
			t.Fatalf("after the refused batch: %+v %v, %d deliveries; want nothing recorded", got, err, deliveries)
		}
		if err := r.commit(ctx, "rpl_1", "A", b(5, "ct_live")); err != nil {
			t.Fatalf("a batch of a live person: %v", err)
		}
		if err := r.commit(ctx, "rpl_1", "A", b(6)); err != nil {
			t.Fatalf("a batch of nobody: %v", err)
		}
		if got, err := r.get(ctx, "rpl_1"); err != nil || got.upTo != 6 || got.count != 2 {
			t.Fatalf("after two batches: %+v %v", got, err)
		}
	})
}

// On PostgreSQL a replay's batch and an erasure's cleanup of the outbox take turns on the
// account's erasure lock, whichever processes they run in: a batch does not commit while a
// cleanup of its account is under way (it goes again), and a cleanup waits for a batch that has
// checked its persons until that batch committed, so that it finds the batch's rows.
func TestAReplayBatchAndAnErasureCleanupTakeTurns(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	r := replays{db: db}
	claim := ReplayClaim.Milliseconds()
	if _, created, err := r.create(ctx, replayRow{id: "rpl_1", accountID: "acc_1", subscriptionID: "whk_1", since: time.UnixMilli(1)}, "A", 1000, 1000+claim); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	typ, version, data, err := domain.EncodeEvent(domain.ContactErased{ContactID: "ct_1", AccountID: "acc_1", ErasedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	erasure := domain.Recorded{ID: "evt_erasure", StreamID: "ct_1", Position: 9, Type: typ, SchemaVersion: version, Data: data}
	b := batch{upTo: 5, now: 2000, claimedUntil: 2000 + claim, accountID: "acc_1", persons: []string{"ct_1"}}

	// A cleanup under way: the batch records nothing, and says so.
	cleanup, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := eraseDeliveries(ctx, cleanup, sqldb.Postgres, erasure); err != nil {
		t.Fatal(err)
	}
	if err := r.commit(ctx, "rpl_1", "A", b); !errors.Is(err, errErasing) {
		t.Fatalf("a batch during a cleanup of its account: %v, want errErasing", err)
	}
	if err := cleanup.Commit(); err != nil {
		t.Fatal(err)
	}

	// A batch that checked its persons: the next cleanup waits until it committed.
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := r.noneErasedSince(ctx, tx, b); err != nil {
		t.Fatal(err)
	}
	cleaned := make(chan error, 1)
	go func() {
		cleanup, err := db.Write.BeginTx(ctx, nil)
		if err == nil {
			if err = eraseDeliveries(ctx, cleanup, sqldb.Postgres, erasure); err == nil {
				err = cleanup.Commit()
			} else {
				cleanup.Rollback()
			}
		}
		cleaned <- err
	}()
	select {
	case err := <-cleaned:
		t.Fatalf("the cleanup ran while a batch that checked its persons was open: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cleaned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cleanup still waits after the batch committed")
	}
}
