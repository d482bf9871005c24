package webhooks_test

import (
	"bytes"
	"maps"
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

// Failures are retried with the same ids and body, base × 3^(n-1) apart, until a 2xx; a
// delivery that succeeded is not sent again.
func TestRetriesUntilSuccessWithSameIDsAndBody(t *testing.T) {
	clock := &aheadClock{}
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase, c.WebhookBackoffCap, c.WebhookNow = time.Hour, 24*time.Hour, clock.Now
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, 500, 502, 500, 200)
		form := newForm(t, svc, acc.ID, "Signup")
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "retry@example.com")

		// Attempt n+1 is due an hour × 3^(n-1), ±20%, after attempt n: about 1, 3 and 9 hours.
		// The schedule's clock is moved there rather than waited for.
		for n, want := range []time.Duration{time.Hour, 3 * time.Hour, 9 * time.Hour} {
			// The attempt and the next due time are written by two statements: read again until
			// the log shows the due time of this attempt, not the one it was sent at.
			d := waitAttempts(t, svc, acc.ID, n+1)
			last := d["attempts"].([]any)[n].(map[string]any)
			next := timeOf(t, d["nextAttemptAt"])
			for deadline := time.Now().Add(5 * time.Second); !next.After(timeOf(t, last["at"])) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				d = waitAttempts(t, svc, acc.ID, n+1)
				last = d["attempts"].([]any)[n].(map[string]any)
				next = timeOf(t, d["nextAttemptAt"])
			}
			if gap := next.Sub(timeOf(t, last["at"])); gap < want*8/10 || gap > want*12/10+time.Second {
				t.Fatalf("attempt %d is due %s after attempt %d, want %s ±20%%", n+2, gap, n+1, want)
			}
			clock.reach(next)
		}
		got := rcv.waitFor(t, 4, 5*time.Second)
		for i, r := range got[1:] {
			if !bytes.Equal(r.body, got[0].body) || r.header.Get("X-Service-Delivery") != got[0].header.Get("X-Service-Delivery") || r.header.Get("webhook-id") != got[0].header.Get("webhook-id") {
				t.Fatalf("attempt %d differs from the first", i+2)
			}
		}
		d := waitDelivery(t, svc, acc.ID, "succeeded", 5*time.Second)
		attempts := d["attempts"].([]any)
		if len(attempts) != 4 || attempts[0].(map[string]any)["statusCode"] != float64(500) || attempts[0].(map[string]any)["error"] == "" {
			t.Fatalf("attempt log = %v", attempts)
		}

		// Not sent again: a later delivery is claimed by the query that would take the succeeded
		// one too were it still due (oldest first); stopping the service waits for the sends in
		// flight, so the counts are final.
		submit(t, svc, acc.ID, form, "later@example.com")
		rcv.waitFor(t, 5, 5*time.Second)
		svc.Stop()
		if sent := rcv.byDelivery(); len(sent) != 2 || sent[d["id"].(string)] != 4 {
			t.Fatalf("requests by delivery = %v; the succeeded delivery must have had 4 and no more", sent)
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
		// Given up means no 11th attempt. A delivery made after it (another account's) is claimed
		// by the query that would take the given-up one too were it still due; the count is
		// read at the end, once the service stopped, which waits for the sends in flight.
		probeAcc := svc.NewAccount(t)
		probe := newReceiver(t)
		subscribe(t, svc, probeAcc.ID, map[string]any{"url": probe.URL, "events": []string{"form.submitted"}})
		submit(t, svc, probeAcc.ID, newForm(t, svc, probeAcc.ID, "Probe"), "probe@example.com")
		probe.waitFor(t, 1, 5*time.Second)
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
		svc.Stop()
		if n := rcv.count(); n != 11 {
			t.Fatalf("the receiver got %d requests, want 10 attempts and the manual retry", n)
		}
	})
}

// A manual retry of a delivery that is still being retried brings its next attempt forward
// and keeps the rest of its schedule: it still gets all ten attempts.
//
// Each retry is due an hour on, on the schedule's clock, which the test moves there: between two
// attempts the delivery waits unclaimed for as long as the test needs, so the manual retry cannot
// meet a claim (that would be a 409, "being sent right now", which is what the service answers
// then: the delivery is on its way already).
func TestManualRetryOfAPendingDeliveryKeepsItsAttempts(t *testing.T) {
	clock := &aheadClock{}
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase, c.WebhookBackoffCap, c.WebhookNow = time.Hour, time.Hour, clock.Now
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, 500)
		form := newForm(t, svc, acc.ID, "Signup")
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "pending@example.com")
		d := waitRescheduled(t, svc, acc.ID, 1)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries/"+d["id"].(string)+"/retry", "", nil).Expect(t, http.StatusOK)
		// The retry is attempt 2, made now; attempts 3 to 10 come on the schedule.
		for n := 2; n < 10; n++ {
			clock.reach(timeOf(t, waitRescheduled(t, svc, acc.ID, n)["nextAttemptAt"]))
		}
		failed := waitDelivery(t, svc, acc.ID, "failed", 10*time.Second)
		if n := len(failed["attempts"].([]any)); n != 10 || rcv.count() != 10 {
			t.Fatalf("after a manual retry of a pending delivery: %d attempts logged, %d received, want 10", n, rcv.count())
		}
	})
}

// A manual retry is stamped with the retry schedule's clock, which the dispatcher claims by, not
// with time.Now: with that clock two hours ahead, the retried delivery is due at the clock's now,
// not two hours before it, and is sent.
func TestManualRetryRunsOnTheScheduleClock(t *testing.T) {
	clock := &aheadClock{}
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase, c.WebhookBackoffCap, c.WebhookNow = 24*time.Hour, 24*time.Hour, clock.Now
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, 500, 200)
		form := newForm(t, svc, acc.ID, "Signup")
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "clock@example.com")
		d := waitRescheduled(t, svc, acc.ID, 1) // the next attempt is a day away
		clock.reach(time.Now().Add(2 * time.Hour))
		before := clock.Now().Truncate(time.Millisecond)
		res := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries/"+d["id"].(string)+"/retry", "", nil).Expect(t, http.StatusOK)
		after := clock.Now()
		if next := timeOf(t, res.Object(t, "delivery")["nextAttemptAt"]); next.Before(before) || next.After(after) {
			t.Fatalf("the manual retry is due at %s, want the schedule's clock's now, between %s and %s", next, before, after)
		}
		rcv.waitFor(t, 2, 5*time.Second)
		waitDelivery(t, svc, acc.ID, "succeeded", 5*time.Second)
	})
}

// waitRescheduled waits until the account's only delivery has n attempts and is due again after
// the last of them, and returns it. The delivery and its attempts are read by two queries: a
// read between the record's commit and the next one may pair the attempt with the due time it
// was sent at, so it is read again until the due time has moved past the attempt.
func waitRescheduled(t *testing.T, svc *servicetest.Service, accountID string, n int) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list := deliveries(t, svc, accountID, "")
		if len(list) == 1 && list[0]["status"] == "pending" {
			if attempts := list[0]["attempts"].([]any); len(attempts) == n &&
				timeOf(t, list[0]["nextAttemptAt"]).After(timeOf(t, attempts[n-1].(map[string]any)["at"])) {
				return list[0]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery was not rescheduled after %d attempts: %v", n, list)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
		// submit returns once the webhook projector applied the event: a delivery for the
		// disabled subscription would be in the outbox by now, and only one there is ever sent.
		submit(t, svc, acc.ID, form, "after@example.com")
		if len(deliveries(t, svc, acc.ID, "")) != 1 {
			t.Fatal("an event after the 410 was queued for the disabled subscription")
		}
		if rcv.count() != 1 {
			t.Fatalf("receiver got %d requests; a disabled subscription must get nothing more", rcv.count())
		}
	})
}

// An operator enables a webhook a 410 disabled (POST /admin/v1/accounts/{a}/webhooks/{id}/enable,
// the integration API's enable for the operator): it is active again and receives what comes
// next, not what it missed; a replay, refused while it was disabled, is accepted. Enabling an
// active one changes nothing; a deleted one is 404.
func TestOperatorEnablesADisabledWebhook(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, http.StatusGone, http.StatusOK)
		form := newForm(t, svc, acc.ID, "Signup")
		hookID, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		base := "/admin/v1/accounts/" + acc.ID + "/webhooks/" + hookID
		submit(t, svc, acc.ID, form, "gone@example.com")
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "").List(t, "webhooks")
			if len(hooks) == 1 && hooks[0]["status"] == "disabled" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscription not disabled: %v", hooks)
			}
		}
		submit(t, svc, acc.ID, form, "missed@example.com") // while disabled: never sent
		window := map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}
		svc.Operator.Post(t, base+"/replay", "", window).ExpectError(t, http.StatusConflict)

		hook := svc.Operator.Post(t, base+"/enable", "", nil).Expect(t, http.StatusOK).Object(t, "webhook")
		if hook["id"] != hookID || hook["status"] != "active" || hook["statusReason"] != nil {
			t.Fatalf("enabled webhook = %v", hook)
		}
		if hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "").List(t, "webhooks"); hooks[0]["status"] != "active" {
			t.Fatalf("listed after enabling: %v", hooks)
		}
		submit(t, svc, acc.ID, form, "after@example.com")
		got := rcv.waitFor(t, 2, 5*time.Second)
		if email := decode(t, got[1].body)["data"].(map[string]any)["contact"].(map[string]any)["email"]; email != "after@example.com" {
			t.Fatalf("after enabling, the receiver got %v", email)
		}
		if again := svc.Operator.Post(t, base+"/enable", "", nil).Expect(t, http.StatusOK).Object(t, "webhook"); again["status"] != "active" {
			t.Fatalf("enabling an active webhook = %v", again)
		}
		svc.Operator.Post(t, base+"/replay", "", window).Expect(t, http.StatusAccepted)
		svc.Operator.Delete(t, base, "").Expect(t, http.StatusOK)
		svc.Operator.Post(t, base+"/enable", "", nil).ExpectError(t, http.StatusNotFound)
	})
}

// 429 and 503 with Retry-After wait as long as the receiver asked (capped by the backoff cap),
// not the 10 ms the schedule would: the retry is due an hour on, on the schedule's clock, which
// the test then moves there.
func TestRetryAfterIsHonoured(t *testing.T) {
	clock := &aheadClock{}
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase, c.WebhookBackoffCap, c.WebhookNow = 10*time.Millisecond, 24*time.Hour, clock.Now
	}, func(t *testing.T, svc *servicetest.Service) {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			t.Run(http.StatusText(status), func(t *testing.T) {
				acc := svc.NewAccount(t)
				rcv := newReceiver(t, status, http.StatusOK)
				rcv.headers = map[string]string{"Retry-After": "3600"}
				form := newForm(t, svc, acc.ID, "Signup")
				subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
				submit(t, svc, acc.ID, form, "slow@example.com")
				// The attempt and its next due time are written by two statements: read the
				// schedule once the due time has moved past the attempt.
				d := waitAttempts(t, svc, acc.ID, 1)
				at := timeOf(t, d["attempts"].([]any)[0].(map[string]any)["at"])
				for deadline := time.Now().Add(5 * time.Second); !timeOf(t, d["nextAttemptAt"]).After(at) && time.Now().Before(deadline); {
					time.Sleep(20 * time.Millisecond)
					d = waitAttempts(t, svc, acc.ID, 1)
				}
				next := timeOf(t, d["nextAttemptAt"])
				if gap := next.Sub(at); gap < time.Hour || gap > time.Hour+time.Second {
					t.Fatalf("retry due %s after the first attempt, Retry-After asked for 1h", gap)
				}
				clock.reach(next)
				rcv.waitFor(t, 2, 5*time.Second)
				waitDelivery(t, svc, acc.ID, "succeeded", 5*time.Second)
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
		allID, _ := subscribe(t, svc, acc.ID, map[string]any{"url": all.URL, "events": []string{"form.submitted", "scheduling.booked"}})
		formAID, _ := subscribe(t, svc, acc.ID, map[string]any{"url": onlyFormA.URL, "events": []string{"form.submitted", "scheduling.booked"}, "formIds": []string{formA}})
		callBID, _ := subscribe(t, svc, acc.ID, map[string]any{"url": onlyCallB.URL, "events": []string{"scheduling.booked"}, "eventTypeIds": []string{callB}})
		bookingsID, _ := subscribe(t, svc, acc.ID, map[string]any{"url": onlyBookings.URL, "events": []string{"scheduling.booked"}})
		other := svc.NewAccount(t)
		otherRcv := newReceiver(t)
		subscribe(t, svc, other.ID, map[string]any{"url": otherRcv.URL, "events": []string{"form.submitted", "scheduling.booked"}})

		submit(t, svc, acc.ID, formA, "a@example.com")
		submit(t, svc, acc.ID, formB, "b@example.com")
		book(t, svc, acc.ID, callA, "c@example.com")
		book(t, svc, acc.ID, callB, "d@example.com")

		// submit and book return once the webhook projector applied the event: the outbox holds
		// every delivery the filters chose. formIds filters form.submitted only: the bookings
		// still reach formA's subscription.
		wantRows := map[string]int{allID: 4, formAID: 3, callBID: 1, bookingsID: 2}
		rows := map[string]int{}
		for _, d := range deliveries(t, svc, acc.ID, "?limit=100") {
			rows[d["webhookId"].(string)]++
		}
		if !maps.Equal(rows, wantRows) {
			t.Errorf("deliveries by subscription = %v, want %v", rows, wantRows)
		}
		if list := deliveries(t, svc, other.ID, ""); len(list) != 0 {
			t.Errorf("the other account's subscription got deliveries: %v", list)
		}
		// Once they all succeeded, each receiver got one request per delivery.
		for deadline := time.Now().Add(5 * time.Second); len(deliveries(t, svc, acc.ID, "?status=succeeded&limit=100")) < 10; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("deliveries not all succeeded: %v", deliveries(t, svc, acc.ID, "?limit=100"))
			}
		}
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
