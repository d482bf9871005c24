package webhooks_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/cluster"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Two worker processes on one PostgreSQL database whose hosts' clocks disagree by 20 s (the
// second runs ahead): a dispatcher claims a delivery before sending it, so two dispatchers never
// send one delivery at the same time (docs/webhooks.md, "Durability"). Found by a hunt: a claim
// was judged by each process's own clock, so the process ahead took over a claim the other held
// while its attempt was still in flight; claims are now judged by the database's clock, as the
// leases of infra/cluster are.
func TestDispatchersOnSkewedClocksSendOneDeliveryAtATime(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	first := servicetest.StartOn(t, url, func(*service.Config) {})
	// A receiver that holds every request until released, and notes how many requests of each
	// delivery it holds at once.
	var mu sync.Mutex
	inFlight, most, total := map[string]int{}, map[string]int{}, map[string]int{}
	release := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.ReadAll(req.Body)
		id := req.Header.Get("X-Service-Delivery")
		mu.Lock()
		inFlight[id]++
		total[id]++
		most[id] = max(most[id], inFlight[id])
		mu.Unlock()
		select {
		case <-release:
		case <-time.After(5 * time.Second): // well within the 10 s timeout
		}
		mu.Lock()
		inFlight[id]--
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()
	acc := first.NewAccount(t)
	form := newForm(t, first, acc.ID, "Skewed")
	subscribe(t, first, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
	const submissions = 3
	for range submissions {
		submit(t, first, acc.ID, form, "skew@example.com")
	}
	// The first process's dispatcher has every delivery in flight (claimed by its clock for 15 s).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(total)
		mu.Unlock()
		if n == submissions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries attempted", n, submissions)
		}
	}
	// A second worker joins, on a host whose clock runs 20 s ahead.
	second := servicetest.StartOn(t, url, func(c *service.Config) {
		c.WebhookNow = func() time.Time { return time.Now().Add(20 * time.Second) }
	})
	time.Sleep(2 * time.Second) // the first attempts are still held; the second's dispatcher polls every 250 ms
	close(release)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		list := first.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries?limit=200&status=succeeded", "").Expect(t, http.StatusOK).List(t, "deliveries")
		if len(list) == submissions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries succeeded", len(list), submissions)
		}
	}
	first.Stop()
	second.Stop()
	mu.Lock()
	defer mu.Unlock()
	for id, n := range most {
		if n > 1 || total[id] > 1 {
			t.Errorf("delivery %s: sent %d times, %d at the same time", id, total[id], n)
		}
	}
}

// An erasure answers only once no delivery a dispatcher claimed before it is still being sent
// with the person's data (decisions.md "Erasure", service.finishedErasures), whatever the hosts'
// clocks say. The worker sends a delivery of the person to a receiver that holds it; the erasure
// is asked of an API process whose host's clock runs 20 s ahead. Found by a hunt: that process
// judged the worker's claim by its own clock, found it lapsed, and answered 200 while the attempt
// carrying the person's data was still in flight.
func TestAnErasureOnAProcessWithASkewedClockWaitsForTheAttemptInFlight(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	worker := servicetest.StartOn(t, url, func(c *service.Config) { c.Role = cluster.RoleAll })
	api := servicetest.StartOn(t, url, func(c *service.Config) {
		c.Role = cluster.RoleAPI
		c.WebhookNow = func() time.Time { return time.Now().Add(20 * time.Second) } // its host's clock runs 20 s ahead
	})
	const email = "skewed.erasure@example.com"
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.ReadAll(req.Body)
		once.Do(func() { close(arrived) })
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()
	defer close(release)
	acc := worker.NewAccount(t)
	subscribe(t, worker, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
	contactID := submittedContact(t, worker, acc, email)
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery was not attempted")
	}
	erased := eraseInBackground(t, api, acc.ID, contactID)
	select {
	case status := <-erased:
		t.Fatalf("the erasure answered %d while the worker's attempt carrying the person's data was still in flight", status)
	case <-time.After(3 * time.Second): // the attempt is held until the test ends
	}
}
