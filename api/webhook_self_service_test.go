package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func TestWebhookSubscriptionsAndDeliveriesOfTheirOwn(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		ok := newRecorder(t)
		failing := newRecorder(t)
		failing.answer = func() int { return http.StatusInternalServerError }

		restHook := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": ok.URL, "event": "checkout.paid"}).
			Expect(t, http.StatusCreated).Object(t, "subscription")
		appHook := webhookFor(t, svc, acc.ID, failing.URL)
		deleted := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": ok.URL, "event": "form.submitted"}).
			Expect(t, http.StatusCreated).Object(t, "subscription")["id"].(string)
		svc.API.Delete(t, "/api/v1/webhooks/subscriptions/"+deleted, acc.Key).Expect(t, http.StatusOK)
		theirs := webhookFor(t, svc, other.ID, ok.URL)

		// Every subscription not deleted, REST Hooks and the app's alike, oldest first.
		res := svc.API.Get(t, "/api/v1/webhooks/subscriptions", acc.Key).Expect(t, http.StatusOK)
		subs := res.List(t, "subscriptions")
		if len(subs) != 2 || subs[0]["id"] != restHook["id"] || subs[1]["id"] != appHook {
			t.Fatalf("subscriptions = %v", subs)
		}
		if s := subs[0]; s["kind"] != "rest_hook" || s["status"] != "active" || s["disabledReason"] != nil || s["url"] != ok.URL ||
			s["createdAt"] != restHook["createdAt"] || s["secret"] != nil {
			t.Fatalf("subscription view = %v", s)
		}
		if subs[1]["kind"] != "custom" {
			t.Fatalf("the app's subscription = %v", subs[1])
		}
		page1 := svc.API.Get(t, "/api/v1/webhooks/subscriptions?limit=1", acc.Key).Expect(t, http.StatusOK)
		webhookFor(t, svc, acc.ID, sink(t)) // written between the pages: after the cursor, on a later page
		page2 := svc.API.Get(t, "/api/v1/webhooks/subscriptions?limit=1&cursor="+page1.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK)
		if got := page2.List(t, "subscriptions"); len(got) != 1 || got[0]["id"] != appHook {
			t.Fatalf("page 2 = %v", got)
		}

		// Deliveries: newest first, with their attempts; the status filter; the paging. Each
		// purchase's delivery is made before the next purchase: deliveries the projector makes in
		// one batch share their creation time, and are listed by id among themselves.
		for i := range 3 {
			buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "buyer@example.com", ""))
			ok.waitFor(t, i+1)
			time.Sleep(2 * time.Millisecond) // the next delivery's creation time is later
		}
		failing.waitFor(t, 3)
		path := "/api/v1/webhooks/subscriptions/" + restHook["id"].(string) + "/deliveries"
		var okDeliveries []map[string]any
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			okDeliveries = svc.API.Get(t, path+"?status=succeeded", acc.Key).Expect(t, http.StatusOK).List(t, "deliveries")
			if len(okDeliveries) == 3 || time.Now().After(deadline) {
				break
			}
		}
		if len(okDeliveries) != 3 {
			t.Fatalf("succeeded deliveries = %v", okDeliveries)
		}
		got := ok.all()
		if okDeliveries[0]["id"] != got[2].delivery || okDeliveries[2]["id"] != got[0].delivery || okDeliveries[0]["eventId"] != got[2].id {
			t.Fatalf("deliveries %v %v %v are not newest first (received %s %s %s)", okDeliveries[0]["id"], okDeliveries[1]["id"], okDeliveries[2]["id"],
				got[0].delivery, got[1].delivery, got[2].delivery)
		}
		d := okDeliveries[0]
		attempts := d["attempts"].([]any)
		if d["eventType"] != "checkout.purchased" || d["status"] != "succeeded" || d["nextAttemptAt"] != nil || len(attempts) != 1 ||
			attempts[0].(map[string]any)["statusCode"] != float64(200) {
			t.Fatalf("delivery = %v", d)
		}
		// The receiver answered; the attempts are recorded right after: wait for them.
		var failed []map[string]any
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			failed = svc.API.Get(t, "/api/v1/webhooks/subscriptions/"+appHook+"/deliveries?status=pending", acc.Key).Expect(t, http.StatusOK).List(t, "deliveries")
			recorded := len(failed) == 3
			for _, d := range failed {
				recorded = recorded && len(d["attempts"].([]any)) > 0
			}
			if recorded || time.Now().After(deadline) {
				break
			}
		}
		if len(failed) != 3 || len(failed[0]["attempts"].([]any)) == 0 || failed[0]["nextAttemptAt"] == nil || failed[0]["attempts"].([]any)[0].(map[string]any)["statusCode"] != float64(500) {
			t.Fatalf("failing deliveries = %v", failed)
		}
		if none := svc.API.Get(t, path+"?status=failed", acc.Key).Expect(t, http.StatusOK).List(t, "deliveries"); len(none) != 0 {
			t.Fatalf("failed deliveries of a receiver that answers 200 = %v", none)
		}
		first := svc.API.Get(t, path+"?limit=2", acc.Key).Expect(t, http.StatusOK)
		buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "later@example.com", "")) // newer: before the cursor
		rest := svc.API.Get(t, path+"?limit=2&cursor="+first.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK).List(t, "deliveries")
		if len(rest) != 1 || rest[0]["id"] != okDeliveries[2]["id"] {
			t.Fatalf("page 2 = %v, want the oldest delivery", rest)
		}

		// Tenancy, scopes, bad input.
		svc.API.Get(t, "/api/v1/webhooks/subscriptions/"+theirs+"/deliveries", acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/webhooks/subscriptions/wh_doesnotexist/deliveries", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/webhooks/subscriptions/"+deleted+"/deliveries", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, path+"?status=lost", acc.Key).ExpectError(t, http.StatusBadRequest)
		svc.API.Get(t, path+"?cursor=bogus", acc.Key).ExpectError(t, http.StatusBadRequest)
		writeOnly := svc.NewKey(t, acc.ID, []string{"webhooks:write"})
		svc.API.Get(t, "/api/v1/webhooks/subscriptions", writeOnly).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, path, writeOnly).ExpectError(t, http.StatusForbidden)
		readOnly := svc.NewKey(t, acc.ID, []string{"webhooks:read"})
		svc.API.Get(t, path, readOnly).Expect(t, http.StatusOK)
		for _, action := range []string{"replay", "test", "enable"} {
			svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+appHook+"/"+action, readOnly, map[string]any{"since": time.Now().Add(-time.Hour).Format(time.RFC3339), "type": "checkout.purchased"}).
				ExpectError(t, http.StatusForbidden)
			svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+theirs+"/"+action, acc.Key, map[string]any{"since": time.Now().Add(-time.Hour).Format(time.RFC3339), "type": "checkout.purchased"}).
				ExpectError(t, http.StatusForbidden)
			svc.API.Post(t, "/api/v1/webhooks/subscriptions/wh_doesnotexist/"+action, acc.Key, map[string]any{"since": time.Now().Add(-time.Hour).Format(time.RFC3339), "type": "checkout.purchased"}).
				ExpectError(t, http.StatusNotFound)
		}
	})
}

func TestReplayRefusesABadWindow(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		hook := webhookFor(t, svc, acc.ID, sink(t))
		path := "/api/v1/webhooks/subscriptions/" + hook + "/replay"
		now := time.Now().UTC()
		for name, body := range map[string]map[string]any{
			"no since":            {},
			"since not a time":    {"since": "yesterday"},
			"since in the future": {"since": now.Add(time.Hour).Format(time.RFC3339)},
			"since too old":       {"since": now.Add(-31 * 24 * time.Hour).Format(time.RFC3339)},
			"until before since":  {"since": now.Add(-time.Hour).Format(time.RFC3339), "until": now.Add(-2 * time.Hour).Format(time.RFC3339)},
			"unknown type":        {"since": now.Add(-time.Hour).Format(time.RFC3339), "types": []string{"checkout.bogus"}},
			"no types":            {"since": now.Add(-time.Hour).Format(time.RFC3339), "types": []string{}},
		} {
			t.Run(name, func(t *testing.T) {
				svc.API.Post(t, path, acc.Key, body).ExpectError(t, http.StatusBadRequest)
			})
		}
		// Within the 30 days, an empty window is no error: it replays nothing.
		got := svc.API.Post(t, path, acc.Key, map[string]any{"since": now.Add(-29 * 24 * time.Hour).Format(time.RFC3339Nano)}).Expect(t, http.StatusAccepted).Object(t, "replay")
		if got["count"] != float64(0) {
			t.Fatalf("replay = %v", got)
		}
	})
}
