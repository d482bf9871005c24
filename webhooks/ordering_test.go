package webhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/funnelhq/funnel/app"
	"github.com/funnelhq/funnel/app/apptest"
	"github.com/funnelhq/funnel/webhooks"
)

// Events of one resource (a checkout subscription: purchased, rebilled, cancelled) reach a
// webhook in order: a later one is not sent while an earlier one is pending (decisions.md).
// Checkout events arrive with their issue; the rule lives in the outbox, tested here on rows
// carrying an ordering key.
func TestOrderedDeliveriesWaitForEarlierOnes(t *testing.T) {
	run(t, func(c *app.Config) { c.WebhookBackoffBase = 150 * time.Millisecond; c.WebhookBackoffCap = time.Second }, func(t *testing.T, svc *apptest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, 500, 200)
		hook, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased", "checkout.rebilled"}})
		ctx := context.Background()
		now := time.Now().UnixMilli()
		for i, typ := range []string{"checkout.purchased", "checkout.rebilled"} {
			body := `{"id":"evt_` + typ + `","type":"` + typ + `","createdAt":"2026-11-23T00:00:00.000Z","data":{}}`
			_, err := svc.App.DB().Write.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body,
					status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, 'sub_1', $7, 'pending', 0, 10, $8, 0, 0, '', $8, $8)`,
				webhooks.DeliveryID("evt_"+typ, hook), acc.ID, hook, "evt_"+typ, typ, 1_000_000+i, body, now)
			if err != nil {
				t.Fatal(err)
			}
		}
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
