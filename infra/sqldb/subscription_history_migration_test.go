package sqldb_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A database that recorded checkouts before the log was indexed by subscription (migration 8)
// gets the same subscription histories as one that always had the index.
func TestSubscriptionHistoryMigrationIndexesEarlierEvents(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		url := sqldbtest.URL(t, dialect)
		svc := servicetest.StartOn(t, url, func(*service.Config) {})
		acc := svc.NewAccount(t)
		product := svc.NewProduct(t, acc.ID, map[string]any{
			"name": "Pro", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
			"pricingTiers": []any{map[string]any{"name": "Monthly", "amount": 900, "currency": "EUR", "interval": "month"}},
		})
		checkout := "/admin/v1/accounts/" + acc.ID + "/checkout/"
		bought := svc.Operator.Post(t, checkout+"purchases", "", map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "ada@example.com"}).
			Expect(t, http.StatusCreated)
		subID := bought.Object(t, "subscription")["id"].(string)
		rebill := svc.Operator.Post(t, checkout+"subscriptions/"+subID+"/rebill", "", map[string]any{}).Expect(t, http.StatusCreated).Object(t, "transaction")["id"].(string)
		svc.Operator.Post(t, checkout+"transactions/"+rebill+"/refund", "", map[string]any{}).Expect(t, http.StatusOK)
		svc.API.Post(t, "/api/v1/checkout/activations/"+bought.Object(t, "activation")["token"].(string)+"/complete", acc.Key, map[string]any{}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, checkout+"subscriptions/"+subID+"/cancel", "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK)
		hookID := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{"url": "http://127.0.0.1:1/hook", "events": []string{"form.submitted"}}).
			Expect(t, http.StatusCreated).Object(t, "webhook")["id"].(string)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+hookID+"/rotate-secret", "", nil).Expect(t, http.StatusOK)

		historyPath := "/admin/v1/accounts/" + acc.ID + "/history?subscriptionId=" + subID
		hookHistoryPath := "/admin/v1/accounts/" + acc.ID + "/history?subscriptionId=" + hookID
		before := positions(svc.Operator.Get(t, historyPath, "").Expect(t, http.StatusOK).List(t, "events"))
		hookBefore := positions(svc.Operator.Get(t, hookHistoryPath, "").Expect(t, http.StatusOK).List(t, "events"))
		if len(before) != 9 || len(hookBefore) != 2 {
			t.Fatalf("histories before the migration have %d and %d events, want 9 and 2", len(before), len(hookBefore))
		}
		svc.Stop()

		// Back to the schema before migration 8, and forward again.
		db, err := sqldb.OpenExisting(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.MigrateDownTo(ctx, 7); err != nil {
			t.Fatal(err)
		}
		done, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if len(done.Applied) == 0 || done.Applied[0] != "00008_events_by_subscription.go" {
			t.Fatalf("applied %v", done.Applied)
		}

		restarted := servicetest.StartOn(t, url, func(*service.Config) {})
		after := positions(restarted.Operator.Get(t, historyPath, "").Expect(t, http.StatusOK).List(t, "events"))
		if !slices.Equal(after, before) {
			t.Fatalf("history after the migration = %v, before = %v", after, before)
		}
		if after := positions(restarted.Operator.Get(t, hookHistoryPath, "").Expect(t, http.StatusOK).List(t, "events")); !slices.Equal(after, hookBefore) {
			t.Fatalf("webhook subscription history after the migration = %v, before = %v", after, hookBefore)
		}
	})
}

// positions are the log positions of a history's events.
func positions(events []map[string]any) []float64 {
	out := make([]float64, len(events))
	for i, e := range events {
		out[i] = e["position"].(float64)
	}
	return out
}
