package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The documented server-key rotation (README "The server key", architecture.md "Secrets":
// FUNNEL_SECRET_KEY=NEW,OLD everywhere, keep OLD a few days, until every delivery it sealed was
// sent) must leave the integrator's self-service working once OLD is dropped: the event feed,
// replays and test sends read the log, whose personal values are sealed under per-person keys
// that are themselves sealed with the server key. Found by the self-service hunt: once OLD is
// gone, every event of a contact created before the rotation makes them answer 500.
func TestSelfServiceWorksAfterAServerKeyRotationCompletes(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		url := sqldbtest.URL(t, d)
		oldKey, _ := sealingtest.NewKey(t)
		newKey, _ := sealingtest.NewKey(t)
		svc := servicetest.StartOn(t, url, func(c *service.Config) { c.SecretKey = oldKey })
		acc := svc.NewAccount(t)
		form, fields := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		svc.API.Post(t, "/api/v1/forms/"+form+"/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: "before.rotation@example.com"}}).
			Expect(t, http.StatusCreated)
		hook := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": sink(t), "event": "form.submitted"}).
			Expect(t, http.StatusCreated).Object(t, "subscription")["id"].(string)
		svc.Stop()

		// The rotation: NEW first, OLD kept for a while.
		svc = servicetest.StartOn(t, url, func(c *service.Config) { c.SecretKey = newKey + "," + oldKey })
		svc.API.Get(t, "/api/v1/events", acc.Key).Expect(t, http.StatusOK)
		svc.Stop()

		// OLD dropped, as the documentation says may be done once its deliveries were sent.
		svc = servicetest.StartOn(t, url, func(c *service.Config) { c.SecretKey = newKey })
		if events := svc.API.Get(t, "/api/v1/events", acc.Key).Expect(t, http.StatusOK).List(t, "events"); len(events) != 1 {
			t.Fatalf("feed after the rotation = %v", events)
		}
		since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/replay", acc.Key, map[string]any{"since": since}).Expect(t, http.StatusAccepted)
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/test", acc.Key, map[string]any{"type": "form.submitted"}).Expect(t, http.StatusOK)
	})
}
