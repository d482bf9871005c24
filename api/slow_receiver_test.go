package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// One account's replay to a receiver that answers slowly (or not at all, until the 10 s timeout)
// does not hold back the live webhooks of every other account (docs/webhooks.md, "Slow
// receivers"). The dispatcher took due deliveries oldest first whatever their account, so a
// replay of a few hundred events to a hanging receiver filled every slot for (events / 64) × 10 s,
// and another account's purchase waited all that time (5,100 replayed events: about 13 minutes,
// then again at each retry round). Now it waits at most the 2 s after which the replay's sends are
// slow and give their slots back.
func TestAReplayToASlowReceiverDoesNotHoldBackOtherAccounts(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc := servicetest.Start(t, d, func(*service.Config) {})
		release := make(chan struct{})
		var held atomic.Int64
		hanging := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			held.Add(1)
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
		for replayed := time.Now(); held.Load() < 64; time.Sleep(20 * time.Millisecond) { // every slot holds a replayed delivery
			if time.Since(replayed) > 10*time.Second {
				t.Fatalf("%d replayed deliveries reached the receiver in 10 s, want 64 at once", held.Load())
			}
		}

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
		// The operator sees it: one account slow.
		if metrics := string(svc.Operator.Get(t, "/metrics", "").Expect(t, http.StatusOK).Raw); !strings.Contains(metrics, "\nfunnel_webhook_slow_accounts 1\n") {
			t.Error("funnel_webhook_slow_accounts is not 1 while a replay's sends wait on a receiver that does not answer")
		}
	})
}
