package webhooks_test

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/webhooks/verify"
)

// A delivery carries the envelope and every header of the contract, signed both ways.
func TestDeliveryIsSignedAndComplete(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, http.StatusNoContent)
		form := newForm(t, svc, acc.ID, "Signup")
		hookID, secret := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL + "/hook", "events": []string{"form.submitted"}})
		eventID := submit(t, svc, acc.ID, form, "ada@example.com")

		got := rcv.waitFor(t, 1, 5*time.Second)[0]
		h := got.header
		if h.Get("Content-Type") != "application/json" || h.Get("X-Service-Event") != "form.submitted" {
			t.Fatalf("headers = %v", h)
		}
		delivery := waitDelivery(t, svc, acc.ID, "succeeded", 5*time.Second)
		if h.Get("X-Service-Delivery") != delivery["id"] || h.Get("webhook-id") != delivery["id"] {
			t.Fatalf("delivery id headers %q/%q, log says %v", h.Get("X-Service-Delivery"), h.Get("webhook-id"), delivery["id"])
		}
		if err := verify.Service(secret, got.body, h.Get("X-Service-Signature")); err != nil {
			t.Fatalf("X-Service-Signature: %v", err)
		}
		if err := verify.Standard(secret, h, got.body, time.Minute, time.Now()); err != nil {
			t.Fatalf("Standard Webhooks signature: %v", err)
		}
		if ts, _ := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64); time.Since(time.Unix(ts, 0)) > time.Minute {
			t.Fatalf("webhook-timestamp = %s", h.Get("webhook-timestamp"))
		}
		env := decode(t, got.body)
		if env["id"] != eventID || env["type"] != "form.submitted" || env["createdAt"] == nil || env["data"] == nil || len(env) != 4 {
			t.Fatalf("envelope = %v", env)
		}
		if delivery["eventId"] != eventID || delivery["webhookId"] != hookID || delivery["eventType"] != "form.submitted" {
			t.Fatalf("delivery log = %v", delivery)
		}
		attempts := delivery["attempts"].([]any)
		if len(attempts) != 1 || attempts[0].(map[string]any)["statusCode"] != float64(204) {
			t.Fatalf("attempts = %v", attempts)
		}
	})
}

// Failures are retried with the same ids and body, base × 3^(n-1) apart, until a 2xx.
func TestRetriesUntilSuccessWithSameIDsAndBody(t *testing.T) {
	run(t, func(c *service.Config) { c.WebhookBackoffBase = 50 * time.Millisecond; c.WebhookBackoffCap = time.Second }, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, 500, 502, 500, 200)
		form := newForm(t, svc, acc.ID, "Signup")
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "retry@example.com")

		got := rcv.waitFor(t, 4, 10*time.Second)
		for i, r := range got[1:] {
			if !bytes.Equal(r.body, got[0].body) || r.header.Get("X-Service-Delivery") != got[0].header.Get("X-Service-Delivery") || r.header.Get("webhook-id") != got[0].header.Get("webhook-id") {
				t.Fatalf("attempt %d differs from the first", i+2)
			}
		}
		// Attempt n+1 waits 50ms × 3^(n-1), ±20%: 50, 150, 450 ms.
		for n, want := range []time.Duration{50, 150, 450} {
			gap := got[n+1].at.Sub(got[n].at)
			if gap < want*time.Millisecond*8/10 || gap > want*time.Millisecond*3 {
				t.Errorf("wait before attempt %d = %s, want about %dms", n+2, gap, want)
			}
		}
		d := waitDelivery(t, svc, acc.ID, "succeeded", 5*time.Second)
		attempts := d["attempts"].([]any)
		if len(attempts) != 4 || attempts[0].(map[string]any)["statusCode"] != float64(500) || attempts[0].(map[string]any)["error"] == "" {
			t.Fatalf("attempt log = %v", attempts)
		}
		time.Sleep(200 * time.Millisecond)
		if rcv.count() != 4 {
			t.Fatalf("a succeeded delivery was sent again: %d requests", rcv.count())
		}
	})
}

// After ten failed attempts the delivery is given up; an operator can still send it again.
func TestGivesUpAfterTenAttemptsThenManualRetry(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, 500)
		form := newForm(t, svc, acc.ID, "Signup")
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "never@example.com")
		d := waitDelivery(t, svc, acc.ID, "failed", 10*time.Second)
		if n := len(d["attempts"].([]any)); n != 10 || rcv.count() != 10 {
			t.Fatalf("attempts = %d, received = %d, want 10", n, rcv.count())
		}
		time.Sleep(300 * time.Millisecond)
		if rcv.count() != 10 {
			t.Fatalf("an 11th attempt was made")
		}
		if list := deliveries(t, svc, acc.ID, "?status=failed"); len(list) != 1 {
			t.Fatalf("failed filter = %v", list)
		}

		rcv.mu.Lock()
		rcv.statuses = []int{200}
		rcv.mu.Unlock()
		res := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries/"+d["id"].(string)+"/retry", "", nil).Expect(t, http.StatusOK)
		if res.Object(t, "delivery")["status"] != "pending" {
			t.Fatalf("retried delivery = %s", res.Raw)
		}
		got := rcv.waitFor(t, 11, 5*time.Second)
		if !bytes.Equal(got[10].body, got[0].body) || got[10].header.Get("X-Service-Delivery") != d["id"] {
			t.Fatal("the manual retry did not resend the same delivery")
		}
		waitDelivery(t, svc, acc.ID, "succeeded", 5*time.Second)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries/dlv_unknown/retry", "", nil).ExpectError(t, http.StatusNotFound)
		other := svc.NewAccount(t)
		svc.Operator.Post(t, "/admin/v1/accounts/"+other.ID+"/webhook-deliveries/"+d["id"].(string)+"/retry", "", nil).ExpectError(t, http.StatusForbidden)
	})
}

// A manual retry of a delivery that is still being retried brings its next attempt forward
// and keeps the rest of its schedule: it still gets all ten attempts.
func TestManualRetryOfAPendingDeliveryKeepsItsAttempts(t *testing.T) {
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase = 150 * time.Millisecond
		c.WebhookBackoffCap = 150 * time.Millisecond
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, 500)
		form := newForm(t, svc, acc.ID, "Signup")
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "pending@example.com")
		var d map[string]any
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if list := deliveries(t, svc, acc.ID, ""); len(list) == 1 && len(list[0]["attempts"].([]any)) == 1 {
				d = list[0]
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no first attempt recorded")
			}
		}
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries/"+d["id"].(string)+"/retry", "", nil).Expect(t, http.StatusOK)
		failed := waitDelivery(t, svc, acc.ID, "failed", 10*time.Second)
		if n := len(failed["attempts"].([]any)); n != 10 || rcv.count() != 10 {
			t.Fatalf("after a manual retry of a pending delivery: %d attempts logged, %d received, want 10", n, rcv.count())
		}
	})
}

// 410 Gone stops the retries and disables the subscription (REST Hooks convention).
func TestGoneDisablesTheSubscription(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, http.StatusGone)
		form := newForm(t, svc, acc.ID, "Signup")
		hookID, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "gone@example.com")
		waitDelivery(t, svc, acc.ID, "failed", 5*time.Second)
		deadline := time.Now().Add(5 * time.Second)
		for {
			hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "").List(t, "webhooks")
			if len(hooks) == 1 && hooks[0]["id"] == hookID && hooks[0]["status"] == "disabled" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscription not disabled: %v", hooks)
			}
			time.Sleep(20 * time.Millisecond)
		}
		submit(t, svc, acc.ID, form, "after@example.com")
		time.Sleep(300 * time.Millisecond)
		if rcv.count() != 1 {
			t.Fatalf("receiver got %d requests; a disabled subscription must get nothing more", rcv.count())
		}
		if len(deliveries(t, svc, acc.ID, "")) != 1 {
			t.Fatal("an event after the 410 was queued for the disabled subscription")
		}
	})
}

// 429 and 503 with Retry-After wait as long as the receiver asked (capped by the backoff cap).
func TestRetryAfterIsHonoured(t *testing.T) {
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase = 10 * time.Millisecond
		c.WebhookBackoffCap = 5 * time.Second
	}, func(t *testing.T, svc *servicetest.Service) {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			t.Run(http.StatusText(status), func(t *testing.T) {
				acc := svc.NewAccount(t)
				rcv := newReceiver(t, status, http.StatusOK)
				rcv.headers = map[string]string{"Retry-After": "1"}
				form := newForm(t, svc, acc.ID, "Signup")
				subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
				submit(t, svc, acc.ID, form, "slow@example.com")
				got := rcv.waitFor(t, 2, 5*time.Second)
				if gap := got[1].at.Sub(got[0].at); gap < 950*time.Millisecond {
					t.Fatalf("retried after %s, Retry-After asked for 1s", gap)
				}
			})
		}
	})
}

// A redirect is not followed: it is a failed attempt, and the other URL gets nothing.
func TestRedirectIsNotFollowed(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		elsewhere := newReceiver(t, http.StatusOK)
		rcv := newReceiver(t, http.StatusFound, http.StatusOK)
		rcv.headers = map[string]string{"Location": elsewhere.URL}
		form := newForm(t, svc, acc.ID, "Signup")
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "redirect@example.com")
		d := waitDelivery(t, svc, acc.ID, "succeeded", 5*time.Second)
		first := d["attempts"].([]any)[0].(map[string]any)
		if first["statusCode"] != float64(302) || first["error"] == "" {
			t.Fatalf("first attempt = %v", first)
		}
		if elsewhere.count() != 0 {
			t.Fatal("the redirect was followed")
		}
	})
}

// Each subscription gets only its events and what its filters let through.
func TestEventsAndFiltersChooseDeliveries(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		formA := newForm(t, svc, acc.ID, "A")
		formB := newForm(t, svc, acc.ID, "B")
		callA := newCalendar(t, svc, acc.ID, "Call A")
		callB := newCalendar(t, svc, acc.ID, "Call B")
		all := newReceiver(t)
		onlyFormA := newReceiver(t)
		onlyCallB := newReceiver(t)
		onlyBookings := newReceiver(t)
		subscribe(t, svc, acc.ID, map[string]any{"url": all.URL, "events": []string{"form.submitted", "scheduling.booked"}})
		subscribe(t, svc, acc.ID, map[string]any{"url": onlyFormA.URL, "events": []string{"form.submitted", "scheduling.booked"}, "formIds": []string{formA}})
		subscribe(t, svc, acc.ID, map[string]any{"url": onlyCallB.URL, "events": []string{"scheduling.booked"}, "eventTypeIds": []string{callB}})
		subscribe(t, svc, acc.ID, map[string]any{"url": onlyBookings.URL, "events": []string{"scheduling.booked"}})
		other := svc.NewAccount(t)
		otherRcv := newReceiver(t)
		subscribe(t, svc, other.ID, map[string]any{"url": otherRcv.URL, "events": []string{"form.submitted", "scheduling.booked"}})

		submit(t, svc, acc.ID, formA, "a@example.com")
		submit(t, svc, acc.ID, formB, "b@example.com")
		book(t, svc, acc.ID, callA, "c@example.com")
		book(t, svc, acc.ID, callB, "d@example.com")

		all.waitFor(t, 4, 5*time.Second)
		onlyCallB.waitFor(t, 1, 5*time.Second)
		onlyBookings.waitFor(t, 2, 5*time.Second)
		// formIds filters form.submitted only: the bookings still reach it.
		onlyFormA.waitFor(t, 3, 5*time.Second)
		time.Sleep(200 * time.Millisecond)
		for name, want := range map[string]struct {
			r *receiver
			n int
		}{"all": {all, 4}, "formA": {onlyFormA, 3}, "callB": {onlyCallB, 1}, "bookings": {onlyBookings, 2}, "other account": {otherRcv, 0}} {
			if got := want.r.count(); got != want.n {
				t.Errorf("%s got %d deliveries, want %d", name, got, want.n)
			}
		}
		for _, r := range onlyFormA.got {
			env := decode(t, r.body)
			if env["type"] == "form.submitted" && env["data"].(map[string]any)["formId"] != formA {
				t.Errorf("formA subscription got %v", env["data"])
			}
		}
		if env := decode(t, onlyCallB.got[0].body); env["data"].(map[string]any)["eventTypeId"] != callB {
			t.Errorf("callB subscription got %v", env)
		}
	})
}
