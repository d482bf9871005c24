package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// When many accounts are slow at once (say a receiver platform many accounts use hangs), the slow
// pool fills. A send that turns slow while it is full waits for a place in it and then gives its
// slot back, and slow accounts get no new slot while the pool has no room: the slots stay free for
// the accounts whose receivers answer. (A send that found the pool full kept its slot until it
// timed out, and slow accounts kept being given slots: every slot was held by sends that would not
// be answered, and another account's delivery waited up to Timeout - SlowAfter.)
func TestAFullSlowPoolLeavesTheSlotsToOthers(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		hanging := newHoldingReceiver(t, time.Minute)
		var mu sync.Mutex
		arrived := map[string]time.Time{}
		fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			arrived[r.Header.Get("webhook-id")] = time.Now()
			mu.Unlock()
		}))
		t.Cleanup(fast.Close)

		const accounts = 24
		subs := map[string][2]string{"wh_fast": {"acc_fast", fast.URL}}
		var backlog []string
		for i := range accounts {
			id := fmt.Sprintf("wh_h%02d", i)
			subs[id] = [2]string{fmt.Sprintf("acc_h%02d", i), hanging.URL + "/" + id}
			backlog = append(backlog, id)
		}
		db := sharedOutbox(t, dialect, subs, nil, 0)
		// Interleaved: each hanging account's deliveries are spread through the queue, so that
		// every one of them is sent (and found slow) early, as when a receiver platform that many
		// accounts use hangs.
		now := time.Now().UnixMilli()
		for k := range 10 {
			for i, sub := range backlog {
				addDelivery(t, db, sub, subs[sub][0], fmt.Sprintf("dlv_%s_%03d", sub, k), int64(k*accounts+i+1), now)
			}
		}

		// 4 slots (a slow account gets 1), a slow pool of 16; a send is slow after 250 ms and
		// given up after 3 s.
		d := NewDispatcher(db, Config{Schedule: Schedule{Base: time.Hour, Cap: time.Hour}, Policy: TargetPolicy{AllowPrivate: true},
			Timeout: 3 * time.Second, SlowAfter: 250 * time.Millisecond, Concurrency: 4, Poll: 50 * time.Millisecond},
			nil, func(context.Context, string, string, string) error { return nil }, &countingObserver{}, zaptest.NewLogger(t))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.Run(ctx)
		}()
		t.Cleanup(func() { cancel(); <-done })

		// Let every hanging account be found slow.
		time.Sleep(5 * time.Second)
		t.Logf("hanging requests held when the fast account's deliveries begin: %d", hanging.held(""))
		// How many hanging requests are held, sampled while the fast account's deliveries come:
		// with 24 slow accounts and a backlog, 20 (4 slots and a pool of 16) would be held at all
		// times if the pool were refilled.
		stopSampling := make(chan struct{})
		sampled := make(chan [2]int)
		go func() {
			lo, n := 1000, 0
			for {
				select {
				case <-stopSampling:
					sampled <- [2]int{lo, n}
					return
				case <-time.After(20 * time.Millisecond):
					lo, n = min(lo, hanging.held("")), n+1
				}
			}
		}()
		var worst time.Duration
		sent := map[string]time.Time{}
		for i := range 10 {
			id := fmt.Sprintf("dlv_fast_%02d", i)
			sent[id] = time.Now()
			addDelivery(t, db, "wh_fast", "acc_fast", id, int64(100000+i), time.Now().UnixMilli())
			d.Wake()
			time.Sleep(300 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		close(stopSampling)
		if s := <-sampled; s[0] < 8 {
			t.Errorf("as few as %d hanging requests were held (of %d samples) though the pool of 16 had room and 24 slow accounts had due deliveries: the pool drained while sends that turned slow when it was full kept the slots", s[0], s[1])
		}
		mu.Lock()
		defer mu.Unlock()
		for id, at := range sent {
			got, ok := arrived[id]
			if !ok {
				t.Errorf("%s never arrived", id)
				continue
			}
			worst = max(worst, got.Sub(at))
		}
		t.Logf("worst wait of the fast account's deliveries: %s (hanging requests held now: %d)", worst, hanging.held(""))
		if worst > time.Second {
			t.Errorf("a fast account's delivery waited %s for a slot while slow accounts' sends held them; want about SlowAfter (250 ms)", worst)
		}
	})
}

// While an account is slow, claims are paced by the time the claim passing over its deliveries
// took, at most a poll: one claim that waited on the database (here a transaction holding the
// deliveries table for 1.5 s, as a long projector batch, a checkpoint or a lock would) does not
// stop every claim, of every account, for three times as long after it.
func TestOneSlowClaimDoesNotPauseTheOthers(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		hanging := newHoldingReceiver(t, time.Minute)
		var mu sync.Mutex
		var arrivedAt time.Time
		fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			arrivedAt = time.Now()
			mu.Unlock()
		}))
		t.Cleanup(fast.Close)
		db := sharedOutbox(t, dialect, map[string][2]string{
			"wh_slow": {"acc_slow", hanging.URL},
			"wh_fast": {"acc_fast", fast.URL},
		}, []string{"wh_slow"}, 40)
		d := runDispatcher(t, db) // 8 slots, slow after 500 ms, poll 100 ms
		waitUntil(t, 3*time.Second, "the slow account's first sends", func() bool { return hanging.count() >= 8 })
		time.Sleep(time.Second) // found slow: claims are now shared out, and paced

		ctx := context.Background()
		tx, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		lock := `UPDATE webhook_deliveries SET updated_at = updated_at WHERE id = 'dlv_wh_slow_039'`
		if dialect == sqldb.Postgres {
			lock = `LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE`
		}
		if _, err := tx.ExecContext(ctx, lock); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // a claim (a tick's) waits behind it
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		added := time.Now()
		addDelivery(t, db, "wh_fast", "acc_fast", "dlv_fast", 1000, added.UnixMilli())
		d.Wake()
		waitUntil(t, 10*time.Second, "the fast account's delivery", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return !arrivedAt.IsZero()
		})
		mu.Lock()
		waited := arrivedAt.Sub(added)
		mu.Unlock()
		t.Logf("the fast account's delivery, added and woken after the slow claim, waited %s", waited)
		if waited > time.Second {
			t.Errorf("a delivery of an account that is not slow waited %s after one claim had waited 1.5 s on the database: the pace (3x that claim) held every claim back", waited)
		}
	})
}
