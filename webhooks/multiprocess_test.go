package webhooks_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Two processes on one PostgreSQL database (here two services in one test process, each with its
// own relay, projections and dispatcher): every event becomes one delivery per subscription, and
// each delivery is sent exactly once, although both dispatchers claim from the same outbox.
func TestTwoDispatchersNeverSendOneDeliveryTwice(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	first := servicetest.StartOn(t, url, fast)
	second := servicetest.StartOn(t, url, fast)
	acc := first.NewAccount(t)
	rcv := newReceiver(t)
	form := newForm(t, first, acc.ID, "Shared")
	subscribe(t, first, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})

	const submissions = 60
	var wg sync.WaitGroup
	for i := 0; i < submissions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			svc := first
			if i%2 == 1 {
				svc = second // appended through the other process: its relay and dispatcher see it first
			}
			submit(t, svc, acc.ID, form, "shared@example.com")
		}(i)
	}
	wg.Wait()
	rcv.waitFor(t, submissions, 15*time.Second)
	for _, svc := range []*servicetest.Service{first, second} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			list := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries?limit=200&status=succeeded", "").Expect(t, http.StatusOK).List(t, "deliveries")
			if len(list) == submissions {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the delivery log shows %d succeeded deliveries, want %d", len(list), submissions)
			}
		}
	}
	// Every delivery is recorded succeeded, and stopping both processes waits for the sends
	// still in flight: a duplicate has reached the receiver by now, if there is one.
	first.Stop()
	second.Stop()
	seen := rcv.byDelivery()
	if rcv.count() != submissions || len(seen) != submissions {
		t.Fatalf("%d requests for %d distinct deliveries of %d events", rcv.count(), len(seen), submissions)
	}
}
