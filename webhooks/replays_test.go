package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/idempotency"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/webhooks"
)

// holdFirstBatch is a service.Config.AfterReplayBatch that holds each replay after its first
// batch: it sends the replay's id on held and waits for a value of release, or for stop to close
// (a test that failed meanwhile lets the service stop).
func holdFirstBatch(held chan<- string, release, stop <-chan struct{}) func(string) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(id string) {
		mu.Lock()
		first := !seen[id]
		seen[id] = true
		mu.Unlock()
		if first {
			select {
			case held <- id:
			case <-stop:
				return
			}
			select {
			case <-release:
			case <-stop:
			}
		}
	}
}

// waitHeld returns the id of the replay held after its first batch.
func waitHeld(t *testing.T, held <-chan string) string {
	t.Helper()
	select {
	case id := <-held:
		return id
	case <-time.After(60 * time.Second):
		t.Fatal("no replay batch was committed")
		return ""
	}
}

// replayProgress reads a replay's row: its state, the deliveries it counts, and how many of its
// deliveries the outbox holds.
func replayProgress(t *testing.T, db *sqldb.DB, id string) (state string, count, recorded int) {
	t.Helper()
	if err := db.Read.QueryRow(`SELECT state, delivery_count FROM webhook_replays WHERE id = $1`, id).Scan(&state, &count); err != nil {
		t.Fatal(err)
	}
	// A replay's delivery ids derive from its id: those of its subscription made after the replay's row.
	if err := db.Read.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries d JOIN webhook_replays r ON d.subscription_id = r.subscription_id
		WHERE r.id = $1 AND d.created_at >= r.created_at`, id).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	return state, count, recorded
}

// A replay of thousands of events commits each batch on its own: while it is held between two
// batches, the first batch's deliveries are in the outbox with the replay's progress, and another
// write of the service commits (on SQLite the one writer is free, on PostgreSQL no transaction
// is held open). It answers once every batch is in, and each billing subscription's payments
// arrive in order.
func TestReplayCommitsEachBatchOnItsOwn(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		held, release, stop := make(chan string, 1), make(chan struct{}), make(chan struct{})
		svc := servicetest.Start(t, d, func(c *service.Config) {
			fast(c)
			c.AfterReplayBatch = holdFirstBatch(held, release, stop)
		})
		t.Cleanup(func() { close(stop) }) // before the service stops
		acc := svc.NewAccount(t)
		b := newBilling(t, svc, acc.ID)
		b.subscriptions(100, 19) // 2,000 payments, none delivered: the subscription comes after
		other := svc.NewAccount(t)
		otherProduct := pro(t, svc, other.ID)
		rcv := newReceiver(t)
		rcv.mu.Lock()
		rcv.notify = make(chan struct{}, 4000)
		rcv.mu.Unlock()
		hook, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased", "checkout.rebilled"}})

		answer := make(chan servicetest.Response, 1)
		go func() {
			answer <- svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/replay", acc.Key,
				map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
		}()
		id := waitHeld(t, held)
		state, count, recorded := replayProgress(t, svc.App.DB(), id)
		if state != "recording" || count == 0 || count >= b.count() || recorded != count {
			t.Fatalf("held after its first batch, the replay is %s with %d deliveries counted and %d in the outbox; want recording, the first batch's in both",
				state, count, recorded)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := svc.App.Commands().Purchase.Handle(ctx, commands.Purchase{Meta: commands.Meta{AccountID: other.ID}, ProductID: otherProduct.ID,
			PricingTierID: otherProduct.TierIDs[1], Email: "meanwhile@example.com"}); err != nil {
			t.Fatalf("a write while a replay is recorded: %v", err)
		}
		// A purchase of the account after the request: its window (no until) ended when the
		// request came, so the replay leaves it to its own delivery.
		later := pro(t, svc, acc.ID)
		if _, err := svc.App.Commands().Purchase.Handle(ctx, commands.Purchase{Meta: commands.Meta{AccountID: acc.ID}, ProductID: later.ID,
			PricingTierID: later.TierIDs[1], Email: "later@example.com"}); err != nil {
			t.Fatalf("a purchase while a replay is recorded: %v", err)
		}
		release <- struct{}{}

		res := <-answer
		replay := res.Expect(t, http.StatusAccepted).Object(t, "replay")
		if replay["id"] != id || replay["count"] != float64(b.count()) {
			t.Fatalf("replay = %v, want %s with %d deliveries (not the purchase made after the request)", replay, id, b.count())
		}
		// In the outbox since the replay's row: its deliveries and the later purchase's own.
		if state, count, recorded := replayProgress(t, svc.App.DB(), id); state != "recorded" || count != b.count() || recorded != b.count()+1 {
			t.Fatalf("the replay is %s with %d counted, %d in the outbox; want recorded, %d and %d", state, count, recorded, b.count(), b.count()+1)
		}
		b.checkOrder(rcv.waitFor(t, b.count()+1, 120*time.Second))

		// A subscription deleted while its replay is recorded ends the replay: recorded, with the
		// deliveries of the batches before.
		go func() {
			answer <- svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/replay", acc.Key,
				map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
		}()
		ended := waitHeld(t, held)
		_, first, _ := replayProgress(t, svc.App.DB(), ended)
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+hook, "").Expect(t, http.StatusOK)
		if head, err := svc.App.Store().Head(context.Background()); err != nil {
			t.Fatal(err)
		} else if err := svc.App.ReadModels().WaitReadModels(context.Background(), head); err != nil {
			t.Fatal(err)
		}
		release <- struct{}{}
		res = <-answer
		if replay := res.Expect(t, http.StatusAccepted).Object(t, "replay"); replay["id"] != ended || replay["count"] != float64(first) {
			t.Fatalf("the replay of a subscription deleted after its first batch = %v, want %s with %d deliveries", replay, ended, first)
		}
		if state, count, _ := replayProgress(t, svc.App.DB(), ended); state != "recorded" || count != first {
			t.Fatalf("the replay of a deleted subscription is %s with %d deliveries, want recorded with %d", state, count, first)
		}
	})
}

// A process that stops between two batches of a replay leaves it half recorded: the next start
// finishes it, without any request, from where it was and under the same id, so every event is
// delivered once, with the delivery id it would have had. A retry of the request with its
// Idempotency-Key answers that replay, and records no other.
func TestReplayCutShortByACrashIsFinishedAfterTheRestart(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, d)
		clock := &aheadClock{} // the service's clock: moved on, the dead process's claims run out
		configure := func(c *service.Config) { fast(c); c.Now = clock.Now }
		setup := servicetest.StartOn(t, dbURL, configure)
		acc := setup.NewAccount(t)
		b := newBilling(t, setup, acc.ID)
		b.subscriptions(20, 54) // 1,100 payments: three batches
		rcv := newReceiver(t)
		rcv.mu.Lock()
		rcv.notify = make(chan struct{}, 4000)
		rcv.mu.Unlock()
		hook, _ := subscribe(t, setup, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased", "checkout.rebilled"}})
		setup.Stop()

		// A process without its background work (so nothing sends, nothing resumes) records the
		// first batch, then stops.
		held, stop := make(chan string, 1), make(chan struct{})
		cfg := service.Defaults()
		cfg.DatabaseURL, cfg.AdminToken, cfg.SecretKey, cfg.RateLimits = dbURL, servicetest.AdminToken, servicetest.SecretKey(dbURL), false
		cfg.Now, cfg.AfterReplayBatch = clock.Now, holdFirstBatch(held, nil, stop)
		doomed, err := service.Open(context.Background(), cfg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"since": %q}`, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		req := httptest.NewRequest(http.MethodPost, "/api/v1/webhooks/subscriptions/"+hook+"/replay", strings.NewReader(body))
		req.Host = cfg.APIHost
		req.Header.Set("Authorization", "Bearer "+acc.Key)
		req.Header.Set("Idempotency-Key", "replay-1")
		go doomed.APIHandler().ServeHTTP(httptest.NewRecorder(), req) // it never answers
		id := waitHeld(t, held)
		state, count, recorded := replayProgress(t, doomed.DB(), id)
		if state != "recording" || count == 0 || count >= b.count() || recorded != count {
			t.Fatalf("cut short, the replay is %s with %d counted and %d in the outbox", state, count, recorded)
		}
		doomed.Close()
		t.Cleanup(func() { close(stop) }) // its next batch fails on the closed database

		// The next start, once the dead process's claims ran out, finishes the replay by itself.
		clock.reach(time.Now().Add(webhooks.ReplayClaim + idempotency.Lease))
		second := servicetest.StartOn(t, dbURL, configure)
		got := rcv.waitFor(t, b.count(), 120*time.Second)
		b.checkOrder(got)
		if state, count, recorded := replayProgress(t, second.App.DB(), id); state != "recorded" || count != b.count() || recorded != b.count() {
			t.Fatalf("after the restart the replay is %s with %d counted, %d in the outbox; want recorded, %d", state, count, recorded, b.count())
		}
		for dlv, n := range rcv.byDelivery() {
			if n != 1 {
				t.Fatalf("delivery %s was sent %d times", dlv, n)
			}
		}

		// The retry of the request answers the replay it asked for.
		res := second.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/webhooks/subscriptions/" + hook + "/replay", Token: acc.Key,
			Body: body, Headers: map[string]string{"Idempotency-Key": "replay-1"}})
		if replay := res.Expect(t, http.StatusAccepted).Object(t, "replay"); replay["id"] != id || replay["count"] != float64(b.count()) {
			t.Fatalf("the retry answered %s, want replay %s of %d deliveries", res.Raw, id, b.count())
		}
		var replays, all int
		if err := second.App.DB().Read.QueryRow(`SELECT COUNT(*) FROM webhook_replays`).Scan(&replays); err != nil {
			t.Fatal(err)
		}
		if err := second.App.DB().Read.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE subscription_id = $1`, hook).Scan(&all); err != nil {
			t.Fatal(err)
		}
		if replays != 1 || all != b.count() {
			t.Fatalf("after the retry: %d replays, %d deliveries; want 1 and %d", replays, all, b.count())
		}
	})
}
