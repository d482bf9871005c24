package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The durable cancel-at-period-end timer, through the whole service: billing periods pass on an
// injected clock (service.Config.Now), not in real time.

// testClock is the clock of every process of a test: tests move it instead of sleeping for a
// month.
type testClock struct{ now atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.Set(time.Date(2025, 1, 31, 9, 0, 0, 0, time.UTC))
	return c
}

func (c *testClock) Now() time.Time  { return time.Unix(0, c.now.Load()).UTC() }
func (c *testClock) Set(t time.Time) { c.now.Store(t.UnixNano()) }

func (c *testClock) configure(cfg *service.Config) { cfg.Now = c.Now }

// timerLooks reads how often the timer loop of svc has looked at its timers, from /metrics.
func timerLooks(t *testing.T, svc *servicetest.Service) int {
	t.Helper()
	metrics := svc.Operator.Get(t, "/metrics", "").Expect(t, http.StatusOK)
	for _, line := range strings.Split(string(metrics.Raw), "\n") {
		if value, ok := strings.CutPrefix(line, "funnel_subscription_timer_looks_total "); ok {
			n, err := strconv.Atoi(value)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatal("no funnel_subscription_timer_looks_total in /metrics")
	return 0
}

// awaitTimerLooks waits until the timer loop of svc has looked at its timers twice more: any
// timer due by the clock when it is called has been fired since (the first look may have begun
// before the clock moved).
func awaitTimerLooks(t *testing.T, svc *servicetest.Service) {
	t.Helper()
	want := timerLooks(t, svc) + 2
	deadline := time.Now().Add(15 * time.Second)
	for timerLooks(t, svc) < want {
		if time.Now().After(deadline) {
			t.Fatal("the timer loop did not look at its timers within 15 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cancellingSubscription buys a monthly subscription and cancels it at period end through the
// commands of svc, and returns it with the end of its period.
func cancellingSubscription(t *testing.T, svc *servicetest.Service, accountID string) (string, time.Time) {
	t.Helper()
	ctx := context.Background()
	product := svc.NewProduct(t, accountID, map[string]any{"name": "Club", "pricingTiers": []any{
		map[string]any{"name": "Monthly", "amount": 900, "currency": "EUR", "interval": "month"}}})
	meta := commands.Meta{AccountID: accountID, Actor: domain.OperatorActor}
	bought, err := svc.App.Commands().Purchase.Handle(ctx, commands.Purchase{Meta: meta, ProductID: product.ID,
		PricingTierID: product.TierIDs[0], Email: "member@example.com"})
	if err != nil {
		t.Fatalf("purchase: %v", err)
	}
	cancel, err := svc.App.Commands().CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: meta,
		SubscriptionID: bought.SubscriptionID, AtPeriodEnd: true})
	if err != nil {
		t.Fatalf("cancel at period end: %v", err)
	}
	if err := svc.App.ReadModels().WaitReadModels(ctx, cancel.Position); err != nil {
		t.Fatal(err)
	}
	return bought.SubscriptionID, cancel.CurrentPeriodEnd
}

// cancellations returns the SubscriptionCancelled events of a subscription's stream.
func cancellations(t *testing.T, svc *servicetest.Service, subscriptionID string) []domain.SubscriptionCancelled {
	t.Helper()
	recs, err := svc.App.Store().ReadStream(context.Background(), subscriptionID)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.SubscriptionCancelled
	for _, r := range recs {
		e, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := e.(domain.SubscriptionCancelled); ok {
			out = append(out, c)
		}
	}
	return out
}

// awaitCancelled waits until the subscriptions are cancelled and their timers gone from the read
// model, and returns the cancellations of each: exactly one each is wanted.
func awaitCancelled(t *testing.T, svc *servicetest.Service, subscriptionIDs ...string) map[string][]domain.SubscriptionCancelled {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, id := range subscriptionIDs {
		for len(cancellations(t, svc, id)) == 0 || hasTimer(t, svc.App.DB(), id) {
			if time.Now().After(deadline) {
				t.Fatalf("subscription %s was not cancelled by its timer (pending timers: %v)", id, pendingTimers(t, svc.App.DB()))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	awaitTimerLooks(t, svc) // room for a second cancellation to show up
	out := map[string][]domain.SubscriptionCancelled{}
	for _, id := range subscriptionIDs {
		out[id] = cancellations(t, svc, id)
	}
	return out
}

func pendingTimers(t *testing.T, db *sqldb.DB) []string {
	t.Helper()
	return sqldbtest.Dump(t, db.Read, "subscription_timers", "id")
}

func hasTimer(t *testing.T, db *sqldb.DB, subscriptionID string) bool {
	t.Helper()
	var n int
	if err := db.Read.QueryRow(`SELECT COUNT(*) FROM subscription_timers WHERE id = $1`, subscriptionID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func wantOneCancellationAt(t *testing.T, got []domain.SubscriptionCancelled, periodEnd time.Time) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("%d SubscriptionCancelled in the stream, want exactly 1: %+v", len(got), got)
	}
	if !got[0].Subscription.CancelledAt.Equal(periodEnd) || got[0].Subscription.Status != domain.SubscriptionStatusCancelled {
		t.Fatalf("cancellation %+v, want cancelled at the period end %s", got[0].Subscription, periodEnd)
	}
}

// A subscription cancelled at period end stays active while its period runs and is cancelled,
// once, when the clock passes the period end.
func TestSubscriptionTimerCancelsWhenThePeriodEnds(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		clock := newTestClock()
		svc := servicetest.Start(t, d, clock.configure)
		acc := svc.NewAccount(t)
		sub, periodEnd := cancellingSubscription(t, svc, acc.ID)
		if timers := pendingTimers(t, svc.App.DB()); len(timers) != 1 {
			t.Fatalf("pending timers after the cancellation: %v", timers)
		}

		clock.Set(periodEnd.Add(-time.Second))
		awaitTimerLooks(t, svc)
		if got := cancellations(t, svc, sub); len(got) != 0 {
			t.Fatalf("cancelled a second before the period ends: %+v", got)
		}

		clock.Set(periodEnd.Add(time.Second))
		wantOneCancellationAt(t, awaitCancelled(t, svc, sub)[sub], periodEnd)
	})
}

// The timer outlives the process: a cancellation recorded while no service runs (another
// process's commands, nothing projecting them) fires after the next start, once its period ends,
// and its checkout.subscription_cancelled webhook is delivered once.
func TestSubscriptionTimerFiresAfterARestart(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		clock := newTestClock()
		dbURL := sqldbtest.URL(t, d)
		first := servicetest.StartOn(t, dbURL, clock.configure)
		acc := first.NewAccount(t)
		var mu sync.Mutex
		var received []map[string]any
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var env map[string]any
			if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
				t.Errorf("webhook body: %v", err)
			}
			mu.Lock()
			received = append(received, env)
			mu.Unlock()
		}))
		t.Cleanup(receiver.Close)
		first.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{"url": receiver.URL, "events": []string{"checkout.subscription_cancelled"}}).
			Expect(t, http.StatusCreated)
		sub, periodEnd := cancellingSubscription(t, first, acc.ID)
		first.Stop()

		// While no service runs, the period ends.
		clock.Set(periodEnd.Add(time.Hour))
		second := servicetest.StartOn(t, dbURL, clock.configure)
		wantOneCancellationAt(t, awaitCancelled(t, second, sub)[sub], periodEnd)
		deadline := time.Now().Add(15 * time.Second)
		for {
			mu.Lock()
			got := slices.Clone(received)
			mu.Unlock()
			if len(got) > 1 {
				t.Fatalf("%d webhooks for one cancellation: %v", len(got), got)
			}
			if len(got) == 1 {
				data := got[0]["data"].(map[string]any)
				s := data["subscription"].(map[string]any)
				if got[0]["type"] != "checkout.subscription_cancelled" || s["id"] != sub || s["status"] != "cancelled" ||
					s["cancelledAt"] != periodEnd.UTC().Format("2006-01-02T15:04:05.000Z") {
					t.Fatalf("webhook = %v", got[0])
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no checkout.subscription_cancelled webhook after the restart")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// Two processes on one PostgreSQL database: the timer loop runs on the one that holds its lease
// (infra/cluster), and each due timer fires exactly once, whichever process set it. (Were both to
// ask EndSubscriptionIfDue, the subscription stream's expected version would let one append and
// the other find the subscription ended.)
func TestSubscriptionTimerFiresOnceWithTwoProcesses(t *testing.T) {
	clock := newTestClock()
	url := sqldbtest.URL(t, sqldb.Postgres)
	first := servicetest.StartOn(t, url, clock.configure)
	second := servicetest.StartOn(t, url, clock.configure)
	acc := first.NewAccount(t)
	type pending struct {
		id        string
		periodEnd time.Time
	}
	var subs []pending
	for i := range 6 {
		svc := first
		if i%2 == 1 {
			svc = second
		}
		id, end := cancellingSubscription(t, svc, acc.ID)
		subs = append(subs, pending{id, end})
	}
	clock.Set(subs[0].periodEnd.Add(time.Hour))
	ids := make([]string, len(subs))
	for i, s := range subs {
		ids[i] = s.id
	}
	got := awaitCancelled(t, timerHolder(t, first, second), ids...)
	for _, s := range subs {
		wantOneCancellationAt(t, got[s.id], s.periodEnd)
	}
}

// timerHolder returns the service whose process runs the timer loop now, as the cluster view
// says.
func timerHolder(t *testing.T, services ...*servicetest.Service) *servicetest.Service {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, p := range services[0].Operator.Get(t, "/admin/v1/cluster", "").List(t, "processes") {
			runs, _ := p["runs"].([]any)
			if !slices.Contains(runs, any("timers")) {
				continue
			}
			for _, svc := range services {
				if svc.App.ProcessID() == p["id"] {
					return svc
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no process runs the timers")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The timers are a read model of the log: rebuilt from it, the pending timer comes back (and
// cancelled ones do not), and it fires.
func TestSubscriptionTimersRebuildFromTheLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		clock := newTestClock()
		svc := servicetest.Start(t, d, clock.configure)
		acc := svc.NewAccount(t)
		ended, _ := cancellingSubscription(t, svc, acc.ID)
		res, err := svc.App.Commands().CancelSubscription.Handle(ctx, commands.CancelSubscription{
			Meta: commands.Meta{AccountID: acc.ID, Actor: domain.OperatorActor}, SubscriptionID: ended})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.App.ReadModels().WaitReadModels(ctx, res.Position); err != nil {
			t.Fatal(err)
		}
		sub, periodEnd := cancellingSubscription(t, svc, acc.ID)
		db := svc.App.DB()
		want := pendingTimers(t, db)
		if len(want) != 1 {
			t.Fatalf("pending timers %v, want the one of %s", want, sub)
		}

		if _, err := db.Write.ExecContext(ctx, `DELETE FROM subscription_timers`); err != nil {
			t.Fatal(err)
		}
		if _, err := service.Rebuild(ctx, db, "subscription-timers", nil); err != nil {
			t.Fatalf("rebuild: %v", err)
		}
		if diff := sqldbtest.DiffRows(want, pendingTimers(t, db), 5); diff != "" {
			t.Fatalf("rebuilt timers differ:\n%s", diff)
		}

		clock.Set(periodEnd)
		wantOneCancellationAt(t, awaitCancelled(t, svc, sub)[sub], periodEnd)
	})
}

// A timer that fails (here one whose subscription is not in the log, written behind the
// projection's back) is logged and tried again; it stops neither the loop nor the other timers.
func TestSubscriptionTimerFailureStopsNoOtherTimer(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		clock := newTestClock()
		svc := servicetest.Start(t, d, clock.configure)
		acc := svc.NewAccount(t)
		if _, err := svc.App.DB().Write.Exec(`INSERT INTO subscription_timers (id, account_id, due_at) VALUES ($1, $2, $3)`,
			"sub_not_in_the_log", acc.ID, int64(1)); err != nil {
			t.Fatal(err)
		}
		sub, periodEnd := cancellingSubscription(t, svc, acc.ID)
		clock.Set(periodEnd.Add(time.Minute))
		wantOneCancellationAt(t, awaitCancelled(t, svc, sub)[sub], periodEnd)
		if !hasTimer(t, svc.App.DB(), "sub_not_in_the_log") {
			t.Fatal("the failing timer vanished: it should stay, to be tried again")
		}
	})
}
