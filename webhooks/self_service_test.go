package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/webhooks"
	"github.com/funnelhq/funnel/webhooks/verify"
)

// billing records purchases of monthly plans and rebills of them through the commands, as fast
// as they commit, and remembers each subscription's transactions in the order they were made.
type billing struct {
	t        *testing.T
	svc      *servicetest.Service
	account  string
	product  servicetest.Product
	byBilled map[string][]string // billing subscription id: its transaction ids, in order
	position int64
}

func newBilling(t *testing.T, svc *servicetest.Service, accountID string) *billing {
	return &billing{t: t, svc: svc, account: accountID, product: pro(t, svc, accountID), byBilled: map[string][]string{}}
}

// subscriptions buys n monthly plans and rebills each of them rebills times, interleaved.
func (b *billing) subscriptions(n, rebills int) {
	b.t.Helper()
	ctx := context.Background()
	var subs []string
	for i := range n {
		res, err := b.svc.App.Commands().Purchase.Handle(ctx, commands.Purchase{Meta: commands.Meta{AccountID: b.account}, ProductID: b.product.ID,
			PricingTierID: b.product.TierIDs[1], Email: fmt.Sprintf("buyer%d@example.com", i)})
		if err != nil {
			b.t.Fatal(err)
		}
		subs = append(subs, res.SubscriptionID)
		b.byBilled[res.SubscriptionID] = append(b.byBilled[res.SubscriptionID], res.TransactionID)
		b.position = max(b.position, res.Position)
	}
	for range rebills {
		for _, sub := range subs {
			res, err := b.svc.App.Commands().Rebill.Handle(ctx, commands.Rebill{Meta: commands.Meta{AccountID: b.account}, SubscriptionID: sub})
			if err != nil {
				b.t.Fatal(err)
			}
			b.byBilled[sub] = append(b.byBilled[sub], res.TransactionID)
			b.position = max(b.position, res.Position)
		}
	}
	if err := b.svc.App.ReadModels().WaitReadModels(ctx, b.position); err != nil {
		b.t.Fatal(err)
	}
}

// count is how many payments were recorded.
func (b *billing) count() int {
	n := 0
	for _, txns := range b.byBilled {
		n += len(txns)
	}
	return n
}

// checkOrder checks that the deliveries got carry each billing subscription's payments once
// each, in the order they were made.
func (b *billing) checkOrder(got []received) {
	b.t.Helper()
	seen := map[string][]string{}
	for _, r := range got {
		tx := decode(b.t, r.body)["data"].(map[string]any)["transaction"].(map[string]any)
		sub := tx["subscriptionId"].(string)
		seen[sub] = append(seen[sub], tx["id"].(string))
	}
	for sub, want := range b.byBilled {
		if fmt.Sprint(seen[sub]) != fmt.Sprint(want) {
			b.t.Fatalf("billing subscription %s: delivered %d payments %v, want %d in order %v", sub, len(seen[sub]), seen[sub], len(want), want)
		}
	}
}

// replay asks for the window since an hour ago to be delivered again, and returns the replay.
func replay(t *testing.T, svc *servicetest.Service, key, subscriptionID string, body map[string]any) map[string]any {
	t.Helper()
	if body == nil {
		body = map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}
	}
	return svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+subscriptionID+"/replay", key, body).Expect(t, http.StatusAccepted).Object(t, "replay")
}

// A replay of a window delivers again every event the subscription matches, with the envelope
// (id and body) of the first delivery and a new delivery id, and in each billing subscription's
// order, thousands of them.
func TestReplayDeliversTheWindowAgainInOrder(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t)
		hook, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased", "checkout.rebilled"}})
		b := newBilling(t, svc, acc.ID)
		b.subscriptions(2, 2)
		first := rcv.waitFor(t, b.count(), 20*time.Second)

		// The first deliveries again, from the replay.
		if got := replay(t, svc, acc.Key, hook, nil); got["count"] != float64(b.count()) || got["id"] == "" {
			t.Fatalf("replay = %v, want %d deliveries", got, b.count())
		}
		all := rcv.waitFor(t, 2*b.count(), 20*time.Second)
		again := all[len(first):]
		b.checkOrder(again)
		byEvent := map[string]received{}
		for _, r := range first {
			byEvent[decode(t, r.body)["id"].(string)] = r
		}
		for _, r := range again {
			was, ok := byEvent[decode(t, r.body)["id"].(string)]
			if !ok || string(was.body) != string(r.body) {
				t.Fatalf("replayed body %s\nfirst delivered %s", r.body, was.body)
			}
			if r.header.Get("X-Service-Delivery") == was.header.Get("X-Service-Delivery") || r.header.Get("webhook-id") != r.header.Get("X-Service-Delivery") {
				t.Fatalf("a replayed delivery has the first delivery's id %s", was.header.Get("X-Service-Delivery"))
			}
		}

		// Thousands of events recorded while no subscription matched them: a new subscription's
		// replay sends them all, each billing subscription's in order. The types narrow it.
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+hook, "").Expect(t, http.StatusOK)
		late := newReceiver(t)
		late.mu.Lock()
		late.notify = make(chan struct{}, 4000) // room for every request: waitFor takes fewer signals than requests
		late.mu.Unlock()
		b2 := newBilling(t, svc, acc.ID)
		b2.subscriptions(100, 10) // 1,100 payments
		hook2, _ := subscribe(t, svc, acc.ID, map[string]any{"url": late.URL, "events": []string{"checkout.purchased", "checkout.rebilled"}})
		onlyPurchases := replay(t, svc, acc.Key, hook2, map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "types": []string{"checkout.paid"}})
		if onlyPurchases["count"] != float64(2+100) {
			t.Fatalf("a replay of purchases only = %v, want 102", onlyPurchases)
		}
		late.waitFor(t, 102, 60*time.Second)
		everything := replay(t, svc, acc.Key, hook2, nil)
		if everything["count"] != float64(b.count()+b2.count()) {
			t.Fatalf("replay = %v, want %d", everything, b.count()+b2.count())
		}
		got := late.waitFor(t, 102+b.count()+b2.count(), 120*time.Second)
		b2.checkOrder(got[102:])
	})
}

// A service that stops in the middle of a replay's deliveries loses none: the next start sends
// the rest, with the same envelope and delivery ids.
func TestReplaySurvivesACrash(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		url := sqldbtest.URL(t, d)
		svc := servicetest.StartOn(t, url, fast)
		acc := svc.NewAccount(t)
		b := newBilling(t, svc, acc.ID)
		b.subscriptions(3, 40) // 123 payments, none delivered: the subscription comes after
		var mu sync.Mutex
		slow := map[string][]string{} // event id: the delivery ids it came with
		release := make(chan struct{})
		rcv := newReceiver(t)
		rcv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body [1 << 16]byte
			n, _ := r.Body.Read(body[:])
			id := decode(t, body[:n])["id"].(string)
			mu.Lock()
			slow[id] = append(slow[id], r.Header.Get("X-Service-Delivery"))
			count := len(slow)
			mu.Unlock()
			if count > 20 {
				<-release // the service stops while these are being sent
			}
		})
		hook, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased", "checkout.rebilled"}})
		if got := replay(t, svc, acc.Key, hook, nil); got["count"] != float64(b.count()) {
			t.Fatalf("replay = %v", got)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			n := len(slow)
			mu.Unlock()
			if n > 20 || time.Now().After(deadline) {
				break
			}
		}
		go func() { time.Sleep(200 * time.Millisecond); close(release) }()
		svc.Stop()

		servicetest.StartOn(t, url, fast)
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			n := len(slow)
			mu.Unlock()
			if n == b.count() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the restart the receiver got %d of %d events", n, b.count())
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for id, ids := range slow {
			for _, dlv := range ids[1:] {
				if dlv != ids[0] {
					t.Fatalf("event %s came with delivery ids %v: a retry after the crash must keep its id", id, ids)
				}
			}
		}
	})
}

// A subscription answered 410 is disabled ("gone") with its pending deliveries given up; one
// whose deliveries all fail for 5 days is disabled too ("failing"). Enabled again, it receives
// what comes next, and nothing it missed; meanwhile it takes test sends.
func TestFailingSubscriptionsAreDisabledAndCanBeEnabled(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		clock := &aheadClock{}
		svc := servicetest.Start(t, d, func(c *service.Config) {
			c.WebhookBackoffBase, c.WebhookBackoffCap, c.WebhookNow = time.Hour, 24*time.Hour, clock.Now
		})
		acc := svc.NewAccount(t)
		form := newForm(t, svc, acc.ID, "Signup")
		status := func(id string) (string, any) {
			t.Helper()
			for _, s := range svc.API.Get(t, "/api/v1/webhooks/subscriptions", acc.Key).Expect(t, http.StatusOK).List(t, "subscriptions") {
				if s["id"] == id {
					return s["status"].(string), s["disabledReason"]
				}
			}
			t.Fatalf("subscription %s is not listed", id)
			return "", nil
		}
		waitStatus := func(id, want string) any {
			t.Helper()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				got, reason := status(id)
				if got == want {
					return reason
				}
				if time.Now().After(deadline) {
					t.Fatalf("subscription %s is %s, want %s", id, got, want)
				}
			}
		}

		gone := newReceiver(t, http.StatusGone, http.StatusOK)
		goneHook, _ := subscribe(t, svc, acc.ID, map[string]any{"url": gone.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "one@example.com")
		if reason := waitStatus(goneHook, "disabled"); reason != "gone" {
			t.Fatalf("disabledReason = %v, want gone", reason)
		}
		submit(t, svc, acc.ID, form, "missed@example.com") // while disabled: never sent
		// A test send still reaches it: how an integrator checks a mended receiver before
		// enabling the subscription (docs/webhooks.md, "Test sends").
		tried := svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+goneHook+"/test", acc.Key, map[string]any{"type": "form.submitted"}).
			Expect(t, http.StatusOK).Object(t, "attempt")
		if tried["statusCode"] != float64(200) {
			t.Fatalf("a test send to the disabled subscription = %v", tried)
		}
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+goneHook+"/enable", acc.Key, map[string]any{}).Expect(t, http.StatusOK)
		if got, reason := status(goneHook); got != "active" || reason != nil {
			t.Fatalf("enabled subscription is %s (%v)", got, reason)
		}
		submit(t, svc, acc.ID, form, "after@example.com")
		got := gone.waitFor(t, 3, 10*time.Second)
		if email := decode(t, got[2].body)["data"].(map[string]any)["contact"].(map[string]any)["email"]; email != "after@example.com" {
			t.Fatalf("after enabling, the receiver got %v", email)
		}

		// Every attempt fails: 5 days after the first failure (on the schedule's clock) the
		// subscription is disabled, and the deliveries still pending are given up.
		down := newReceiver(t, http.StatusInternalServerError)
		downHook, _ := subscribe(t, svc, acc.ID, map[string]any{"url": down.URL, "events": []string{"form.submitted"}})
		// settled waits until every pending delivery of the account (the first subscription's
		// too, which gets every submission) is due after the clock's now: every attempt that was
		// due has been made and recorded, and none is claimed or in flight. Only then does the
		// clock move on: moved while an attempt is in flight, it would lapse the attempt's claim
		// (the delivery sent twice) and date the attempt days after it was made.
		settled := func() {
			t.Helper()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				list := deliveries(t, svc, acc.ID, "?status=pending&limit=100")
				now, due := clock.Now(), 0
				for _, d := range list {
					if !timeOf(t, d["nextAttemptAt"]).After(now) {
						due++
					}
				}
				if due == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d pending deliveries still due: %v", due, len(list), list)
				}
			}
		}
		start := clock.Now()
		submit(t, svc, acc.ID, form, "first@example.com")
		settled()
		for day := 1; day < 5; day++ {
			clock.reach(start.Add(time.Duration(day)*24*time.Hour + time.Minute))
			submit(t, svc, acc.ID, form, fmt.Sprintf("day%d@example.com", day)) // a new delivery, attempted at once
			settled()                                                           // and the retries the day made due
			if got, _ := status(downHook); got != "active" {
				t.Fatalf("disabled after %d days", day)
			}
		}
		if n := len(svc.API.Get(t, "/api/v1/webhooks/subscriptions/"+downHook+"/deliveries?status=pending", acc.Key).List(t, "deliveries")); n != 5 {
			t.Fatalf("%d deliveries pending after 4 days, want 5", n)
		}
		// Past 5 days every retry is due (none waits more than the 24 hour cap), and the first
		// of them to fail disables the subscription.
		clock.reach(start.Add(webhooks.FailingFor + time.Hour))
		if reason := waitStatus(downHook, "disabled"); reason != "failing" {
			t.Fatalf("disabledReason = %v, want failing", reason)
		}
		pending := svc.API.Get(t, "/api/v1/webhooks/subscriptions/"+downHook+"/deliveries?status=pending", acc.Key).Expect(t, http.StatusOK).List(t, "deliveries")
		failed := svc.API.Get(t, "/api/v1/webhooks/subscriptions/"+downHook+"/deliveries?status=failed", acc.Key).Expect(t, http.StatusOK).List(t, "deliveries")
		if len(pending) != 0 || len(failed) != 5 {
			t.Fatalf("after disabling: %d pending, %d failed deliveries, want 0 and 5", len(pending), len(failed))
		}
	})
}

// A test send signs a sample like a delivery and reports the receiver's answer, recording nothing.
func TestTestSendReportsTheAttempt(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		ok := newReceiver(t, http.StatusOK)
		hook, secret := subscribe(t, svc, acc.ID, map[string]any{"url": ok.URL, "events": []string{"form.submitted"}})
		res := svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/test", acc.Key, map[string]any{"type": "checkout.paid"}).Expect(t, http.StatusOK).Object(t, "attempt")
		if res["statusCode"] != float64(200) || res["error"] != "" {
			t.Fatalf("attempt = %v", res)
		}
		got := ok.waitFor(t, 1, 5*time.Second)[0]
		if decode(t, got.body)["type"] != "checkout.purchased" || got.header.Get("X-Service-Event") != "checkout.purchased" {
			t.Fatalf("test event = %s", got.body)
		}
		if err := verify.Service(secret, got.body, got.header.Get("X-Service-Signature")); err != nil {
			t.Fatalf("the test event's X-Service-Signature does not verify: %v", err)
		}
		if err := verify.Standard(secret, got.header, got.body, time.Minute, time.Now()); err != nil {
			t.Fatalf("the test event's webhook-signature does not verify: %v", err)
		}
		failing := newReceiver(t, http.StatusServiceUnavailable)
		bad, _ := subscribe(t, svc, acc.ID, map[string]any{"url": failing.URL, "events": []string{"form.submitted"}})
		res = svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+bad+"/test", acc.Key, map[string]any{"type": "form.submitted"}).Expect(t, http.StatusOK).Object(t, "attempt")
		if res["statusCode"] != float64(503) || res["error"] == "" {
			t.Fatalf("attempt = %v", res)
		}
		for _, id := range []string{hook, bad} {
			if list := svc.API.Get(t, "/api/v1/webhooks/subscriptions/"+id+"/deliveries", acc.Key).Expect(t, http.StatusOK).List(t, "deliveries"); len(list) != 0 {
				t.Fatalf("a test send recorded deliveries: %v", list)
			}
		}
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/test", acc.Key, map[string]any{"type": "nope"}).ExpectError(t, http.StatusBadRequest)
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/test", acc.Key, map[string]any{}).ExpectError(t, http.StatusBadRequest)
	})
}
