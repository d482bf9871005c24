package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// replayPath is the operator's replay of a webhook of an account.
func replayPath(accountID, webhookID string) string {
	return "/admin/v1/accounts/" + accountID + "/webhooks/" + webhookID + "/replay"
}

// The operator replays a window of a webhook, as the integration API does: the events of the
// window reach the receiver again with the envelopes (ids and bodies) of their first delivery and
// new delivery ids, the delivery log lists them, `until` and `types` narrow the window, and a
// retry with its Idempotency-Key replays nothing more.
func TestOperatorReplaysAWindowOfAWebhook(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		rec := newRecorder(t)
		hook := webhookFor(t, svc, acc.ID, rec.URL)
		since := time.Now().Add(-time.Minute).UTC()
		buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "first@example.com", ""))
		buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "second@example.com", ""))
		first := rec.waitFor(t, 2)
		if first[0].id == first[1].id {
			t.Fatalf("two purchases, one envelope id %s", first[0].id)
		}

		res := svc.Operator.Post(t, replayPath(acc.ID, hook), "", map[string]any{"since": since.Format(time.RFC3339Nano)}).Expect(t, http.StatusAccepted)
		replay := res.Object(t, "replay")
		if replay["count"] != float64(2) || !strings.HasPrefix(replay["id"].(string), "rpl_") || res.Body["success"] != true {
			t.Fatalf("replay = %s, want 2 deliveries", res.Raw)
		}
		all := rec.waitFor(t, 4)
		again := all[2:]
		byEvent := map[string]received{first[0].id: first[0], first[1].id: first[1]}
		for _, r := range again {
			was, ok := byEvent[r.id]
			if !ok || string(was.body) != string(r.body) {
				t.Fatalf("replayed envelope %s\nfirst delivered %s", r.body, was.body)
			}
			if r.delivery == was.delivery || r.delivery == "" {
				t.Fatalf("the replay of %s came with delivery id %q, the first delivery's was %q", r.id, r.delivery, was.delivery)
			}
			delete(byEvent, r.id)
		}
		// The delivery log shows the first deliveries and the replayed ones.
		var log []map[string]any
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			log = svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries?status=succeeded&webhookId="+hook, "").Expect(t, http.StatusOK).List(t, "deliveries")
			if len(log) == 4 || time.Now().After(deadline) {
				break
			}
		}
		if len(log) != 4 {
			t.Fatalf("delivery log after the replay = %v, want 4 succeeded deliveries", log)
		}

		// until (excluded) narrows the window to the first purchase: its time up to the second's
		// (unless both were recorded in the same millisecond, when no window holds one only). The
		// two deliveries may have arrived in either order (their ordering keys differ): take the
		// purchases in the order they were made.
		at := func(r received) string { return decoded(t, r.body).(map[string]any)["createdAt"].(string) }
		timeOf := func(r received) time.Time {
			when, err := time.Parse(time.RFC3339Nano, at(r))
			if err != nil {
				t.Fatal(err)
			}
			return when
		}
		if timeOf(first[1]).Before(timeOf(first[0])) {
			first[0], first[1] = first[1], first[0]
		}
		sent := 4
		if at(first[0]) != at(first[1]) {
			res = svc.Operator.Post(t, replayPath(acc.ID, hook), "", map[string]any{"since": at(first[0]), "until": at(first[1])}).Expect(t, http.StatusAccepted)
			if got := res.Object(t, "replay")["count"]; got != float64(1) {
				t.Fatalf("a window holding the first purchase only replayed %v deliveries", got)
			}
			if got := rec.waitFor(t, 5)[4]; got.id != first[0].id {
				t.Fatalf("the window of the first purchase sent %s, want %s", got.id, first[0].id)
			}
			sent++
		}
		// types narrows it: no rebill happened, nothing to send; a legacy name counts as its type.
		res = svc.Operator.Post(t, replayPath(acc.ID, hook), "", map[string]any{"since": since.Format(time.RFC3339), "types": []string{"checkout.rebilled"}}).Expect(t, http.StatusAccepted)
		if got := res.Object(t, "replay")["count"]; got != float64(0) {
			t.Fatalf("a replay of rebills only = %v, want 0", got)
		}

		// A retry with its Idempotency-Key answers the first answer and replays nothing again.
		body := `{"since": "` + since.Format(time.RFC3339Nano) + `", "types": ["checkout.paid"]}`
		once := withKey(svc.Operator, t, http.MethodPost, replayPath(acc.ID, hook), "", "replay-once", body).Expect(t, http.StatusAccepted)
		if got := once.Object(t, "replay")["count"]; got != float64(2) {
			t.Fatalf("a replay of purchases by their legacy name = %v, want 2", got)
		}
		expectReplay(t, withKey(svc.Operator, t, http.MethodPost, replayPath(acc.ID, hook), "", "replay-once", body), once)
		sent += 2
		rec.waitFor(t, sent)
		log = svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries?limit=200&webhookId="+hook, "").Expect(t, http.StatusOK).List(t, "deliveries")
		if len(log) != sent {
			t.Fatalf("%d deliveries after the retried replay, want %d: the retry replayed again", len(log), sent)
		}
	})
}

// The replay refuses what the integration API's refuses, with the same codes: a bad window or
// body is a 400 naming the field, another account's webhook a 403, an unknown or deleted one a
// 404, and a disabled one a 409 until it is enabled.
func TestOperatorReplayRefusals(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		hook := webhookFor(t, svc, acc.ID, sink(t))
		path := replayPath(acc.ID, hook)
		now := time.Now().UTC()
		hourAgo := now.Add(-time.Hour).Format(time.RFC3339)
		for name, c := range map[string]struct {
			body        any
			code, param string
		}{
			"malformed JSON":      {`{"since": `, "invalid_json", ""},
			"not an object":       {`["since"]`, "invalid_json", ""},
			"no since":            {map[string]any{}, "invalid_request", "since"},
			"since not a time":    {map[string]any{"since": "yesterday"}, "invalid_request", "since"},
			"since a number":      {map[string]any{"since": 1732608000}, "invalid_request", "since"},
			"since in the future": {map[string]any{"since": now.Add(time.Hour).Format(time.RFC3339)}, "invalid_request", "since"},
			"since too old":       {map[string]any{"since": now.Add(-31 * 24 * time.Hour).Format(time.RFC3339)}, "invalid_request", "since"},
			"until not a time":    {map[string]any{"since": hourAgo, "until": "now"}, "invalid_request", "until"},
			"until before since":  {map[string]any{"since": hourAgo, "until": now.Add(-2 * time.Hour).Format(time.RFC3339)}, "invalid_request", "until"},
			"until at since":      {map[string]any{"since": hourAgo, "until": hourAgo}, "invalid_request", "until"},
			"unknown type":        {map[string]any{"since": hourAgo, "types": []string{"checkout.bogus"}}, "invalid_request", "types"},
			"no types":            {map[string]any{"since": hourAgo, "types": []string{}}, "invalid_request", "types"},
		} {
			t.Run(name, func(t *testing.T) {
				res := svc.Operator.Do(t, servicetest.Request{Method: http.MethodPost, Path: path, Body: c.body})
				res.ExpectError(t, http.StatusBadRequest)
				if res.Body["code"] != c.code || (c.param != "" && res.Body["param"] != c.param) {
					t.Fatalf("%s: %s, want code %s, param %q", name, res.Raw, c.code, c.param)
				}
			})
		}
		// Within the 30 days, an empty window is no error: it replays nothing.
		got := svc.Operator.Post(t, path, "", map[string]any{"since": now.Add(-29 * 24 * time.Hour).Format(time.RFC3339Nano)}).Expect(t, http.StatusAccepted).Object(t, "replay")
		if got["count"] != float64(0) {
			t.Fatalf("replay = %v", got)
		}

		// Whose webhook: another account's 403, none or a deleted one 404, in an account that
		// does not exist 404. Nothing is replayed to the other account's receiver.
		theirs := newRecorder(t)
		theirHook := webhookFor(t, svc, other.ID, theirs.URL)
		window := map[string]any{"since": hourAgo}
		svc.Operator.Post(t, replayPath(acc.ID, theirHook), "", window).ExpectError(t, http.StatusForbidden)
		svc.Operator.Post(t, replayPath(acc.ID, "wh_nowhere"), "", window).ExpectError(t, http.StatusNotFound)
		svc.Operator.Post(t, replayPath("acc_nowhere", hook), "", window).ExpectError(t, http.StatusNotFound)
		deleted := webhookFor(t, svc, acc.ID, sink(t))
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+deleted, "").Expect(t, http.StatusOK)
		svc.Operator.Post(t, replayPath(acc.ID, deleted), "", window).ExpectError(t, http.StatusNotFound)
		svc.Operator.Do(t, servicetest.Request{Method: http.MethodPost, Path: replayPath(acc.ID, hook), Token: "not-the-token", Body: window}).ExpectError(t, http.StatusUnauthorized)

		// A webhook disabled by a 410 is refused (409) until enabled, then replays its window:
		// the purchase it was answered 410 for, again.
		pro := svc.NewProduct(t, acc.ID, proPlan())
		gone := newRecorder(t)
		gone.answer = func() int { return http.StatusGone }
		goneHook := webhookFor(t, svc, acc.ID, gone.URL)
		buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "buyer@example.com", ""))
		gone.waitFor(t, 1)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if webhookStatus(t, svc, acc.ID, goneHook) == "disabled" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the webhook answered 410 is %s, want disabled", webhookStatus(t, svc, acc.ID, goneHook))
			}
		}
		msg := svc.Operator.Post(t, replayPath(acc.ID, goneHook), "", window).ExpectError(t, http.StatusConflict)
		if !strings.Contains(msg, "disabled") {
			t.Fatalf("replay of a disabled webhook: %q", msg)
		}
		gone.mu.Lock()
		gone.answer = nil
		gone.mu.Unlock()
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+goneHook+"/enable", acc.Key, map[string]any{}).Expect(t, http.StatusOK)
		if got := svc.Operator.Post(t, replayPath(acc.ID, goneHook), "", window).Expect(t, http.StatusAccepted).Object(t, "replay")["count"]; got != float64(1) {
			t.Fatalf("replay of the enabled webhook = %v, want 1", got)
		}
		if again := gone.waitFor(t, 2); again[1].id != again[0].id {
			t.Fatalf("the enabled webhook got %s again, want %s", again[1].id, again[0].id)
		}
		if n := len(theirs.all()); n != 0 {
			t.Fatalf("the other account's receiver got %d webhooks", n)
		}
	})
}

// webhookStatus is a webhook's status as the operator's list shows it.
func webhookStatus(t *testing.T, svc *servicetest.Service, accountID, id string) string {
	t.Helper()
	for _, w := range svc.Operator.Get(t, "/admin/v1/accounts/"+accountID+"/webhooks?limit=200", "").Expect(t, http.StatusOK).List(t, "webhooks") {
		if w["id"] == id {
			return w["status"].(string)
		}
	}
	t.Fatalf("webhook %s is not listed", id)
	return ""
}
