package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// A receiver that was down catches up through the event feed: what it missed is applied once,
// and a delivery that arrives after all (the service's retry) changes nothing.
func TestCatchesUpThroughTheFeedAfterDowntime(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		p := newPlans(t, svc, acc.ID)
		// The receiver is down: its deliveries fail.
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{
			"url": "http://127.0.0.1:1/webhooks/funnel", "events": []string{"checkout.purchased", "checkout.rebilled"}, "secret": testSecret,
		}).Expect(t, http.StatusCreated)
		sub := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{
			"productId": p.basic.ID, "pricingTierId": p.basic.TierIDs[0], "email": "Dora@example.com", "name": "Dora"}).
			Expect(t, http.StatusCreated).Object(t, "subscription")["id"].(string)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/subscriptions/"+sub+"/rebill", "", map[string]any{}).Expect(t, http.StatusCreated)

		r := startReceiver(t, svc, acc.Key, 0)
		if v := r.view(t, "dora@example.com"); v != nil {
			t.Fatalf("before catching up: %+v", v)
		}
		n, err := r.catchUp.run(ctx)
		if err != nil || n != 2 {
			t.Fatalf("catch up applied %d: %v, want the purchase and the rebill", n, err)
		}
		v := r.view(t, "dora@example.com")
		if v == nil || len(v.Active) != 1 || v.Active[0].ProductID != p.basic.ID {
			t.Fatalf("after catching up: %+v", v)
		}
		// Again: the kept cursor reads nothing new.
		if n, err := r.catchUp.run(ctx); err != nil || n != 0 {
			t.Fatalf("a second catch up applied %d: %v", n, err)
		}
		// The feed's envelopes are the deliveries': the purchase delivered late is not applied again.
		res := svc.API.Get(t, "/api/v1/events?types=checkout.purchased", acc.Key).Expect(t, http.StatusOK)
		purchase := mustMarshal(t, res.List(t, "events")[0])
		if r.deliver(t, signed(purchase)) {
			t.Fatal("the purchase, delivered after the catch up, was applied again")
		}
	})
}

// mustMarshal encodes v as JSON.
func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
