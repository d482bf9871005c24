package webhooks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// holdingReceiver holds every request until the sender gives up on it (or hold passes), and
// keeps the most requests it held at once, by path (one path per subscription).
type holdingReceiver struct {
	*httptest.Server
	hold time.Duration

	mu       sync.Mutex
	now, top map[string]int // requests held now and at most, by path ("" for all of them)
	received int
}

func newHoldingReceiver(t *testing.T, hold time.Duration) *holdingReceiver {
	r := &holdingReceiver{hold: hold, now: map[string]int{}, top: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// Read to its end, the server watches the connection: the request's context ends when
		// the sender gives up on it.
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.received++
		for _, key := range []string{"", req.URL.Path} {
			r.now[key]++
			r.top[key] = max(r.top[key], r.now[key])
		}
		r.mu.Unlock()
		select {
		case <-req.Context().Done():
		case <-time.After(r.hold):
		}
		r.mu.Lock()
		r.now[""]--
		r.now[req.URL.Path]--
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

// resetTop forgets the most requests held so far, keeping those held now.
func (r *holdingReceiver) resetTop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, n := range r.now {
		r.top[key] = n
	}
}

// most is the most requests held at once since the last resetTop, on path ("" for all).
func (r *holdingReceiver) most(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.top[path]
}

// held is how many requests are held now, on path ("" for all).
func (r *holdingReceiver) held(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now[path]
}

// count is how many requests came.
func (r *holdingReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.received
}

// sharedOutbox is a database with the given subscriptions (id: account and url) and n due
// deliveries to each of those in backlog, the first one's oldest.
func sharedOutbox(t *testing.T, d sqldb.Dialect, subscriptions map[string][2]string, backlog []string, n int) *sqldb.DB {
	t.Helper()
	db := sqldbtest.Open(t, d)
	now := time.Now().UnixMilli()
	for id, s := range subscriptions {
		if _, err := db.Write.Exec(`INSERT INTO webhook_subscriptions (id, account_id, kind, url, events, filters, secret, previous_secret, previous_valid_until, status, status_reason, created_at, updated_at, position)
			 VALUES ($1, $2, 'custom', $3, '["form.submitted"]', '{}', 'secret-0123456789', '', 0, 'active', '', $4, $4, 1)`, id, s[0], s[1], now); err != nil {
			t.Fatal(err)
		}
	}
	for k, sub := range backlog {
		for i := range n {
			addDelivery(t, db, sub, subscriptions[sub][0], fmt.Sprintf("dlv_%s_%03d", sub, i), int64(k*n+i+1), now)
		}
	}
	return db
}

// addDelivery records a due delivery of the event at position to a subscription.
func addDelivery(t *testing.T, db *sqldb.DB, subscription, account, id string, position, now int64) {
	t.Helper()
	if _, err := db.Write.Exec(`INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body, status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at)
		 VALUES ($1, $2, $3, $4, 'form.submitted', $5, '', '{}', 'pending', 0, 10, $6, 0, 0, '', $6, $6)`,
		id, account, subscription, "evt_"+id, position, now); err != nil {
		t.Fatal(err)
	}
}

// runDispatcher runs a dispatcher of 8 slots that gives up on an answer after a second (a send
// is slow after half a second) until the test ends.
func runDispatcher(t *testing.T, db *sqldb.DB) *Dispatcher {
	t.Helper()
	d := NewDispatcher(db, Config{Schedule: Schedule{Base: time.Hour, Cap: time.Hour}, Policy: TargetPolicy{AllowPrivate: true},
		Timeout: time.Second, Concurrency: 8, Poll: 100 * time.Millisecond},
		nil, func(context.Context, string, string, string) error { return nil }, &countingObserver{}, zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return d
}

// waitUntil fails the test unless ok holds within d.
func waitUntil(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
	}
}

// One account's receivers that never answer, with a backlog, hold every slot only until the
// sends are slow: then another account's delivery goes at once, and the slow account has a
// quarter of the slots (2 of 8 here) wherever its deliveries sit in the queue, so that others
// keep the rest, round after round of timeouts (docs/webhooks.md, "Slow receivers").
func TestSlowReceiversLeaveSlotsToOtherAccounts(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		hanging := newHoldingReceiver(t, time.Minute)
		other := newHoldingReceiver(t, 0)
		db := sharedOutbox(t, dialect, map[string][2]string{
			"wh_slow1": {"acc_slow", hanging.URL + "/1"},
			"wh_slow2": {"acc_slow", hanging.URL + "/2"},
			"wh_other": {"acc_other", other.URL},
		}, []string{"wh_slow1", "wh_slow2"}, 40)
		runDispatcher(t, db)
		waitUntil(t, 3*time.Second, "the backlog's first claim", func() bool { return hanging.count() >= 8 })
		if got := hanging.most(""); got != 8 {
			t.Fatalf("the slow account held %d slots at first, want all 8: no account is slow before a send is", got)
		}

		// Every slot is held by a send that will not be answered: half a second later they are
		// slow and give their slots back.
		addDelivery(t, db, "wh_other", "acc_other", "dlv_other", 1000, time.Now().UnixMilli())
		waitUntil(t, 2*time.Second, "another account's delivery while the slow account's sends hold every slot", func() bool { return other.count() == 1 })

		// The first sends time out after a second; from then on the slow account has 2 at a time,
		// one for each of its subscriptions, though the first one's deliveries are all older.
		waitUntil(t, 3*time.Second, "the first sends' timeouts", func() bool { return hanging.count() > 8 })
		waitUntil(t, time.Second, "the receiver to see the first sends end", func() bool { return hanging.held("") <= 2 })
		hanging.resetTop()
		time.Sleep(2500 * time.Millisecond) // two more rounds of timeouts
		if got := hanging.most(""); got > 2 {
			t.Errorf("the slow account held %d slots at once after its first round, want at most 2 (a quarter of 8)", got)
		}
		if got := hanging.count(); got < 8+4 {
			t.Errorf("the slow account's deliveries were sent %d times in all, want its share sent round after round", got)
		}
		for _, path := range []string{"/1", "/2"} {
			if got := hanging.most(path); got != 1 {
				t.Errorf("subscription %s of the slow account held %d slots at most after the first round, want 1 (an eighth of 8)", path, got)
			}
		}
	})
}

// A receiver that answers within the slow threshold keeps every slot: a burst to one fast
// subscription is sent as many at a time as before.
func TestAFastReceiverHasEverySlot(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		quick := newHoldingReceiver(t, 200*time.Millisecond) // under the half second that makes a send slow
		db := sharedOutbox(t, dialect, map[string][2]string{"wh_1": {"acc_1", quick.URL}}, []string{"wh_1"}, 64)
		runDispatcher(t, db)
		waitUntil(t, 10*time.Second, "the burst", func() bool { return quick.count() == 64 })
		if got := quick.most(""); got != 8 {
			t.Errorf("a fast receiver was sent %d requests at most at once, want every slot (8)", got)
		}
	})
}
