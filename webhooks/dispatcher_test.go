package webhooks

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

type countingObserver struct{ attempts, givenUp, notOpened, slowAccounts int }

func (o *countingObserver) DeliveryAttempted(string, time.Duration) { o.attempts++ }
func (o *countingObserver) DeliveryGivenUp()                        { o.givenUp++ }
func (o *countingObserver) DeliveryNotOpened()                      { o.notOpened++ }
func (o *countingObserver) SlowAccounts(n int)                      { o.slowAccounts = n }

// testSealer is a sealer of a fresh random key.
func testSealer(t testing.TB) *sealing.Sealer {
	_, s := sealingtest.NewKey(t)
	return s
}

// outbox is a migrated database holding one active subscription and one due delivery to it.
func outbox(t *testing.T, d sqldb.Dialect) *sqldb.DB {
	return outboxTo(t, d, "https://example.com/hook")
}

// outboxTo is outbox with a subscription to url.
func outboxTo(t *testing.T, d sqldb.Dialect, url string) *sqldb.DB {
	t.Helper()
	db := sqldbtest.Open(t, d)
	now := time.Now().UnixMilli()
	if _, err := db.Write.Exec(`INSERT INTO webhook_subscriptions (id, account_id, kind, url, events, filters, secret, previous_secret, previous_valid_until, status, status_reason, created_at, updated_at, position)
		 VALUES ('wh_1', 'acc_1', 'custom', $1, '["form.submitted"]', '{}', 'secret-0123456789', '', 0, 'active', '', $2, $2, 1)`, url, now); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body, status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at)
		 VALUES ('dlv_1', 'acc_1', 'wh_1', 'evt_1', 'form.submitted', 2, '', '{}', 'pending', 0, 10, $1, 0, 0, '', $1, $1)`,
	} {
		if _, err := db.Write.Exec(q, now); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func newTestDispatcher(db *sqldb.DB, obs Observer) *Dispatcher {
	return NewDispatcher(db, Config{Schedule: Schedule{Base: time.Second, Cap: time.Minute}, Policy: TargetPolicy{AllowPrivate: true}, Timeout: time.Second, Concurrency: 4, Poll: time.Second},
		nil, func(context.Context, string, string, string) error { return nil }, obs, zap.NewNop())
}

type deliveryRow struct {
	status       string
	attempts     int
	claimedUntil int64
	lastError    string
}

func readDelivery(t *testing.T, db *sqldb.DB) deliveryRow {
	t.Helper()
	var r deliveryRow
	if err := db.Read.QueryRow(`SELECT status, attempts, claimed_until, last_error FROM webhook_deliveries WHERE id = 'dlv_1'`).Scan(&r.status, &r.attempts, &r.claimedUntil, &r.lastError); err != nil {
		t.Fatal(err)
	}
	return r
}

// When the subscriptions of claimed deliveries cannot be read (a database blip, a shutdown), the
// claims are handed back: the delivery stays pending, unattempted and free to claim, instead of
// being given up as if its subscription had ended.
func TestClaimsAreReleasedWhenTheSubscriptionCannotBeRead(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := outbox(t, d)
		closed, err := sql.Open("sqlite", "file::memory:")
		if err != nil {
			t.Fatal(err)
		}
		closed.Close()
		broken := &sqldb.DB{Dialect: db.Dialect, Write: db.Write, Read: closed, Projections: db.Projections}

		obs := &countingObserver{}
		batch, err := newTestDispatcher(broken, obs).claim(context.Background(), 4)
		if err == nil || len(batch) != 0 {
			t.Fatalf("claim with unreadable subscriptions = %d deliveries, %v", len(batch), err)
		}
		if got := readDelivery(t, db); got != (deliveryRow{status: "pending"}) {
			t.Fatalf("delivery after the failed claim = %+v, want pending, unattempted, unclaimed", got)
		}

		batch, err = newTestDispatcher(db, obs).claim(context.Background(), 4)
		if err != nil || len(batch) != 1 || batch[0].url != "https://example.com/hook" || batch[0].subscriptionStatus != "active" {
			t.Fatalf("claim after the blip = %+v, %v", batch, err)
		}
	})
}

// A result recorded after its claim lapsed, when another claim has taken the delivery since,
// changes nothing: the later claim's own result decides, and the delivery log holds its attempt.
func TestALateResultDoesNotOverwriteALaterClaim(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := outbox(t, d)
		obs := &countingObserver{}
		first, second := newTestDispatcher(db, obs), newTestDispatcher(db, obs)
		ctx := context.Background()

		stale, err := first.claim(ctx, 1)
		if err != nil || len(stale) != 1 {
			t.Fatalf("first claim: %v, %v", stale, err)
		}
		// The first claim's lease runs out (a hung send); the other dispatcher claims again, later
		// on the database's clock, so its lease differs.
		if _, err := db.Write.Exec(`UPDATE webhook_deliveries SET claimed_until = 1`); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		fresh, err := second.claim(ctx, 1)
		if err != nil || len(fresh) != 1 || fresh[0].claimedUntil == stale[0].claimedUntil {
			t.Fatalf("second claim: %+v, %v", fresh, err)
		}

		if _, err := first.record(context.Background(), []outcome{{delivery: stale[0], at: time.Now(), status: 200}}); err != nil {
			t.Fatal(err)
		}
		if got := readDelivery(t, db); got.status != "pending" || got.attempts != 0 || got.claimedUntil != fresh[0].claimedUntil {
			t.Fatalf("a lapsed claim's result was recorded over the live claim: %+v", got)
		}
		if _, err := second.record(context.Background(), []outcome{{delivery: fresh[0], at: time.Now(), status: 500, err: "HTTP 500"}}); err != nil {
			t.Fatal(err)
		}
		got := readDelivery(t, db)
		if got.status != "pending" || got.attempts != 1 || got.claimedUntil != 0 || got.lastError != "HTTP 500" {
			t.Fatalf("the live claim's result = %+v", got)
		}
		var logged int
		var code int
		if err := db.Read.QueryRow(`SELECT COUNT(*), MAX(status_code) FROM webhook_attempts WHERE delivery_id = 'dlv_1'`).Scan(&logged, &code); err != nil || logged != 1 || code != 500 {
			t.Fatalf("delivery log holds %d attempts (status %d), want the live claim's one: %v", logged, code, err)
		}
	})
}

// An attempt never outlives its claim: a delivery whose claim has too little time left (its
// subscription read was slow, say) is not sent but handed back, and sent under a fresh claim.
func TestADeliveryIsNotSentOnAClaimAboutToLapse(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		var received atomic.Int64
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { received.Add(1) }))
		defer rcv.Close()
		db := outboxTo(t, d, rcv.URL)
		obs := &countingObserver{}
		disp := newTestDispatcher(db, obs)
		ctx := context.Background()

		batch, err := disp.claim(ctx, 1)
		if err != nil || len(batch) != 1 {
			t.Fatalf("claim: %v, %v", batch, err)
		}
		late := batch[0]
		late.leaseEnds = time.Now().Add(leaseMargin + 100*time.Millisecond)
		out := disp.send(late)
		if !out.unsent || received.Load() != 0 {
			t.Fatalf("a claim about to lapse was sent: unsent %v, %d requests", out.unsent, received.Load())
		}
		if _, err := disp.record(context.Background(), []outcome{out}); err != nil {
			t.Fatal(err)
		}
		if got := readDelivery(t, db); got != (deliveryRow{status: "pending"}) {
			t.Fatalf("delivery after an unsent claim = %+v, want pending, unattempted, unclaimed", got)
		}

		batch, err = disp.claim(ctx, 1)
		if err != nil || len(batch) != 1 {
			t.Fatalf("claim again: %v, %v", batch, err)
		}
		if out := disp.send(batch[0]); out.unsent || out.err != "" || received.Load() != 1 {
			t.Fatalf("under a fresh claim: %+v, %d requests", out, received.Load())
		}
	})
}

// A claimed delivery that an erasure (or the end of its subscription) gave up after its claim
// is not sent: its body, in memory since the claim, stays there. The claim reads each delivery's
// status again with its subscription, once the claim is committed; here the give-up lands between
// the claim and that read.
func TestADeliveryGivenUpWhileClaimedIsNotSent(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		var received atomic.Int64
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { received.Add(1) }))
		defer rcv.Close()
		db := outboxTo(t, d, rcv.URL)
		disp := newTestDispatcher(db, &countingObserver{})
		ctx := context.Background()

		batch, err := disp.claim(ctx, 1)
		if err != nil || len(batch) != 1 || batch[0].status != "pending" {
			t.Fatalf("claim: %+v, %v", batch, err)
		}
		if _, err := db.Write.Exec(`UPDATE webhook_deliveries SET status = 'failed', last_error = 'erased', body = '' WHERE id = 'dlv_1'`); err != nil {
			t.Fatal(err)
		}
		if err := disp.attachSubscriptions(ctx, batch); err != nil {
			t.Fatal(err)
		}
		out := disp.send(batch[0])
		if out.skipReason == "" || received.Load() != 0 {
			t.Fatalf("a delivery given up while claimed was sent: %+v, %d requests", out, received.Load())
		}
		if _, err := disp.record(context.Background(), []outcome{out}); err != nil {
			t.Fatal(err)
		}
		if got := readDelivery(t, db); got.status != "failed" || got.lastError != "erased" || got.attempts != 0 {
			t.Fatalf("delivery after its skipped send = %+v, want failed (erased), unattempted", got)
		}
	})
}

// A retry due sooner is not put off by one due later: the dispatcher's timer waits for the
// soonest, whatever order their attempts were recorded in. (The poll, an hour here, would
// otherwise be what sends it.)
func TestALaterRetryDoesNotPutOffASoonerOne(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		attempts := make(chan string, 10)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("webhook-id")
			attempts <- id
			if id == "dlv_2" {
				// Recorded after dlv_1's, and due long after it.
				time.Sleep(300 * time.Millisecond)
				w.Header().Set("Retry-After", "60")
			} else {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer rcv.Close()
		db := outboxTo(t, d, rcv.URL)
		now := time.Now().UnixMilli()
		if _, err := db.Write.Exec(`INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body, status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at)
			VALUES ('dlv_2', 'acc_1', 'wh_1', 'evt_2', 'form.submitted', 3, '', '{}', 'pending', 0, 10, $1, 0, 0, '', $1, $1)`, now); err != nil {
			t.Fatal(err)
		}
		disp := NewDispatcher(db, Config{Schedule: Schedule{Base: time.Second, Cap: time.Hour}, Policy: TargetPolicy{AllowPrivate: true},
			Timeout: 5 * time.Second, Concurrency: 4, Poll: time.Hour},
			nil, func(context.Context, string, string, string) error { return nil }, &countingObserver{}, zap.NewNop())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- disp.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		seen := map[string]int{}
		deadline := time.After(5 * time.Second)
		for seen["dlv_1"] < 2 {
			select {
			case id := <-attempts:
				seen[id]++
			case <-deadline:
				t.Fatalf("attempts after 5 s: %v; dlv_1 was due again 1 s after its first", seen)
			}
		}
		if seen["dlv_2"] != 1 {
			t.Fatalf("attempts = %v, want dlv_2 once (due in 60 s)", seen)
		}
	})
}
