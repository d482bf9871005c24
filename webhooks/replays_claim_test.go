package webhooks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A replay's claim keeps two recorders apart: while the recorder that holds it renews it, no
// other takes it (a worker's resume included); once it ran out another takes it over, and the
// first one's next batch records nothing, deliveries and progress alike. A retry of the request
// of an Idempotency-Key finds its replay rather than recording another.
func TestReplayClaimKeepsRecordersApart(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		r := replays{db: db}
		claim := ReplayClaim.Milliseconds()
		row := replayRow{id: "rpl_1", accountID: "acc_1", subscriptionID: "whk_1", since: time.UnixMilli(1), idempotencyID: "idem_1"}
		if _, created, err := r.create(ctx, row, "A", 1000, 1000+claim); err != nil || !created {
			t.Fatalf("create: %v %v", created, err)
		}
		delivery := func(id string, position int64) []any {
			return []any{id, "acc_1", "whk_1", "evt_" + id, "checkout.purchased", position, "", "{}", 0, "pending", 0, 10, 0, 0, 0, "", 0, 0}
		}
		count := func() int {
			var n int
			if err := db.Read.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE subscription_id = 'whk_1'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		// A holds it and goes on: B, a worker, finds nothing to resume, and cannot take it.
		if err := r.commit(ctx, "rpl_1", "A", batch{deliveries: [][]any{delivery("d1", 5), delivery("d2", 6)}, upTo: 6, now: 2000, claimedUntil: 2000 + claim}); err != nil {
			t.Fatal(err)
		}
		if ids, err := r.unclaimed(ctx, 3000, 10); err != nil || len(ids) != 0 {
			t.Fatalf("a claimed replay offered for resuming: %v %v", ids, err)
		}
		if ok, err := r.claim(ctx, "rpl_1", "B", 3000, 3000+claim); err != nil || ok {
			t.Fatalf("B took a replay A holds: %v %v", ok, err)
		}

		// A stops renewing: once its claim ran out, B takes it over, and A's next batch records nothing.
		later := int64(2000 + claim)
		if ids, err := r.unclaimed(ctx, later, 10); err != nil || len(ids) != 1 || ids[0] != "rpl_1" {
			t.Fatalf("unclaimed = %v %v, want rpl_1", ids, err)
		}
		if ok, err := r.claim(ctx, "rpl_1", "B", later, later+claim); err != nil || !ok {
			t.Fatalf("B could not take over: %v %v", ok, err)
		}
		if err := r.commit(ctx, "rpl_1", "A", batch{deliveries: [][]any{delivery("d3", 7)}, upTo: 7, now: later, claimedUntil: later + claim}); !errors.Is(err, errReplayTakenOver) {
			t.Fatalf("A's batch after the takeover: %v, want errReplayTakenOver", err)
		}
		if got, err := r.get(ctx, "rpl_1"); err != nil || got.upTo != 6 || got.count != 2 || count() != 2 {
			t.Fatalf("after A's refused batch: %+v %v, %d deliveries; want up to 6, 2 deliveries", got, err, count())
		}
		if err := r.commit(ctx, "rpl_1", "B", batch{deliveries: [][]any{delivery("d3", 7)}, upTo: 7, last: true, now: later, claimedUntil: later + claim}); err != nil {
			t.Fatal(err)
		}
		got, err := r.get(ctx, "rpl_1")
		if err != nil || got.state != replayRecorded || got.upTo != 7 || got.count != 3 || count() != 3 {
			t.Fatalf("recorded: %+v %v, %d deliveries", got, err, count())
		}
		if ok, err := r.claim(ctx, "rpl_1", "C", later*2, later*2+claim); err != nil || ok {
			t.Fatalf("a recorded replay was claimed: %v %v", ok, err)
		}

		// The same Idempotency-Key claim: the replay it asked for, not a second one.
		again := replayRow{id: "rpl_2", accountID: "acc_1", subscriptionID: "whk_1", since: time.UnixMilli(1), idempotencyID: "idem_1"}
		if earlier, created, err := r.create(ctx, again, "D", later, later+claim); err != nil || created || earlier.id != "rpl_1" {
			t.Fatalf("a second replay of one request: %+v %v %v", earlier, created, err)
		}
		// Without a key, each request is a replay of its own.
		for _, id := range []string{"rpl_3", "rpl_4"} {
			if _, created, err := r.create(ctx, replayRow{id: id, accountID: "acc_1", subscriptionID: "whk_1", since: time.UnixMilli(1)}, "E", later, later+claim); err != nil || !created {
				t.Fatalf("create %s: %v %v", id, created, err)
			}
		}
	})
}
