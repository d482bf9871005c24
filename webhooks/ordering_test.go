package webhooks_test

import (
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// Events of one resource (a checkout subscription: purchased, rebilled, cancelled) reach a
// webhook in order: a later one is not sent while an earlier one is pending (decisions.md).
// Here the receiver fails the purchase once: the rebill, recorded meanwhile, waits for it.
// (TestCheckoutLifecycleOrder has the whole lifecycle and a second subscription.)
func TestOrderedDeliveriesWaitForEarlierOnes(t *testing.T) {
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase = 150 * time.Millisecond
		c.WebhookBackoffCap = time.Second
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		p := pro(t, svc, acc.ID)
		rcv := newReceiver(t, 500, 200)
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased", "checkout.rebilled"}})
		sub := pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[1], "email": "order@example.com"}).
			Object(t, "subscription")["id"].(string)
		pay(t, svc, acc.ID, "subscriptions/"+sub+"/rebill", map[string]any{})

		got := rcv.waitFor(t, 3, 5*time.Second)
		types := []string{decode(t, got[0].body)["type"].(string), decode(t, got[1].body)["type"].(string), decode(t, got[2].body)["type"].(string)}
		// The purchase fails once and is retried; the rebill waits for it.
		if types[0] != "checkout.purchased" || types[1] != "checkout.purchased" || types[2] != "checkout.rebilled" {
			t.Fatalf("order of arrival = %v", types)
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(deliveries(t, svc, acc.ID, "?status=succeeded")) != 2 {
			if time.Now().After(deadline) {
				t.Fatal("both deliveries should succeed")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// A replay of an event whose original delivery is still pending puts a second delivery at the
// same position of the same ordering key: only one of them is in flight at a time. Here the
// original fails once and waits an hour (on the schedule's clock) for its retry; the replay,
// recorded meanwhile, waits for it, then goes.
func TestReplayWaitsForThePendingOriginal(t *testing.T) {
	clock := &aheadClock{}
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase, c.WebhookBackoffCap, c.WebhookNow = time.Hour, time.Hour, clock.Now
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		p := pro(t, svc, acc.ID)
		rcv := newReceiver(t, 500, 200)
		hook, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased"}})
		pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[1], "email": "replay@example.com"})
		original := waitRescheduled(t, svc, acc.ID, 1)
		if got := replay(t, svc, acc.Key, hook, nil); got["count"] != float64(1) {
			t.Fatalf("replay = %v, want 1 delivery", got)
		}
		// A delivery recorded after the replay's (another account's) is claimed by the query that
		// would take the replay's too were it a head: once it arrived, the replay was passed over.
		probeAcc := svc.NewAccount(t)
		probe := newReceiver(t)
		subscribe(t, svc, probeAcc.ID, map[string]any{"url": probe.URL, "events": []string{"form.submitted"}})
		submit(t, svc, probeAcc.ID, newForm(t, svc, probeAcc.ID, "Probe"), "probe@example.com")
		probe.waitFor(t, 1, 5*time.Second)
		if n := rcv.count(); n != 1 {
			t.Fatalf("the receiver got %d requests while the original was pending, want its first attempt only", n)
		}

		clock.reach(timeOf(t, original["nextAttemptAt"]))
		got := rcv.waitFor(t, 3, 5*time.Second)
		ids := []string{got[0].header.Get("X-Service-Delivery"), got[1].header.Get("X-Service-Delivery"), got[2].header.Get("X-Service-Delivery")}
		if ids[0] != original["id"] || ids[1] != original["id"] || ids[2] == original["id"] {
			t.Fatalf("deliveries in order of arrival %v, want the original twice (%s), then the replay's", ids, original["id"])
		}
		// Sent only once the original's attempt was recorded: on the schedule's clock, not before it.
		var last, replayed time.Time
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			list := deliveries(t, svc, acc.ID, "?status=succeeded")
			if len(list) == 2 {
				for _, d := range list {
					attempts := d["attempts"].([]any)
					at := timeOf(t, attempts[len(attempts)-1].(map[string]any)["at"])
					if d["id"] == original["id"] {
						last = at
					} else {
						replayed = at
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("succeeded deliveries = %v, want the original and the replay's", list)
			}
		}
		if replayed.Before(last) {
			t.Fatalf("the replay's delivery was sent at %s, before the original's last attempt at %s", replayed, last)
		}
	})
}
