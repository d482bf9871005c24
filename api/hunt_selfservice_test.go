package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// One account's replay to a receiver that answers slowly (or not at all, until the 10 s timeout)
// must not hold back the live webhooks of every other account. docs/webhooks.md "Order": "Events
// of other subscriptions, and independent events, go on meanwhile, in parallel (64 at a time per
// process)". Found by the self-service hunt: the dispatcher claims due deliveries oldest first
// whatever their subscription, so a replay of a few hundred events to a hanging receiver fills
// every slot for (events / 64) × 10 s, and another account's purchase waits all that time
// (5,100 replayed events: about 13 minutes, then again at each retry round).
func TestAReplayToASlowReceiverDoesNotHoldBackOtherAccounts(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc := servicetest.Start(t, d, func(*service.Config) {})
		release := make(chan struct{})
		hanging := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			select {
			case <-release:
			case <-time.After(15 * time.Second): // past the dispatcher's 10 s timeout
			}
		}))
		t.Cleanup(hanging.Close)
		t.Cleanup(func() { close(release) }) // runs first: the hanging requests end

		noisy := svc.NewAccount(t)
		pro := svc.NewProduct(t, noisy.ID, proPlan())
		for i := range 200 {
			buyDirect(t, svc, purchaseOf(noisy.ID, pro, 0, fmt.Sprintf("buyer%d@example.com", i), ""))
		}
		hook := svc.API.Post(t, "/api/v1/webhooks/subscriptions", noisy.Key, map[string]any{"url": hanging.URL, "event": "checkout.purchased"}).
			Expect(t, http.StatusCreated).Object(t, "subscription")["id"].(string)
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/replay", noisy.Key, map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}).
			Expect(t, http.StatusAccepted)
		time.Sleep(500 * time.Millisecond) // the dispatcher has claimed the first replayed deliveries

		other := svc.NewAccount(t)
		otherPro := svc.NewProduct(t, other.ID, proPlan())
		rcv := newRecorder(t)
		webhookFor(t, svc, other.ID, rcv.URL)
		bought := time.Now()
		buyDirect(t, svc, purchaseOf(other.ID, otherPro, 0, "victim@example.com", ""))
		for len(rcv.all()) == 0 {
			if time.Since(bought) > 5*time.Second {
				t.Fatalf("another account's purchase was not delivered within %s while a replay to a slow receiver was being sent", time.Since(bought).Round(time.Second))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
