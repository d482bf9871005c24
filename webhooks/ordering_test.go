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
