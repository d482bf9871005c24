package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A request that meets a database error is logged by its route, not its path: the path of
// GET /api/v1/checkout/activations/{token} is the token, and an outage would have written every
// token presented meanwhile to the log in the clear (PostgreSQL: its database can go away).
func TestADatabaseOutageLogsNoActivationToken(t *testing.T) {
	dbURL := sqldbtest.URL(t, sqldb.Postgres)
	svc := servicetest.StartOn(t, dbURL, func(*service.Config) {})
	acc := svc.NewAccount(t)
	pro := svc.NewProduct(t, acc.ID, proPlan())
	sale := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "logged.buyer@example.com", ""))
	if sale.ActivationToken == "" {
		t.Fatal("the purchase issued no activation token")
	}

	// A second process of the deployment (its background work left to the first), whose log
	// this test reads at the default level.
	core, logs := observer.New(zap.InfoLevel)
	cfg := service.Defaults()
	cfg.DatabaseURL = dbURL
	cfg.SecretKey = servicetest.SecretKey(dbURL)
	cfg.AdminToken = servicetest.AdminToken
	cfg.RateLimits = false
	app, err := service.Open(context.Background(), cfg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close)
	api := httptest.NewServer(app.APIHandler())
	t.Cleanup(api.Close)
	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, api.URL+"/api/v1/checkout/activations/"+sale.ActivationToken, nil)
		req.Host = cfg.APIHost
		req.Header.Set("Authorization", "Bearer "+acc.Key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	sqldbtest.RefuseConnections(t, dbURL)
	if status := get(); status != http.StatusServiceUnavailable {
		t.Fatalf("with the database away: %d, want 503", status)
	}
	for _, entry := range logs.All() {
		line := entry.Message
		for k, v := range entry.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		if strings.Contains(line, sale.ActivationToken) {
			t.Fatalf("the log holds a buyer's activation token in the clear: %s: %s", entry.Level, line)
		}
	}
}

// Answers are never kept by a cache, nor read by a browser as another type: some show a secret
// once (an API key, a webhook's signing secret, an activation token), most hold personal data.
func TestAnswersHoldingSecretsAreNotCacheable(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		sale := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "cached.buyer@example.com", ""))
		answers := map[string]servicetest.Response{
			"POST /admin/v1/accounts/{a}/api-keys (the key)": svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/api-keys", "", map[string]any{"name": "k"}).
				Expect(t, http.StatusCreated),
			"POST /admin/v1/accounts/{a}/webhooks (the signing secret)": svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "",
				map[string]any{"url": sink(t), "events": []string{"form.submitted"}}).Expect(t, http.StatusCreated),
			"POST /api/v1/webhooks/subscriptions (the signing secret)": svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key,
				map[string]any{"url": sink(t), "event": "form.submitted"}).Expect(t, http.StatusCreated),
			"GET /api/v1/checkout/activations/{token} (the token)": svc.API.Get(t, "/api/v1/checkout/activations/"+sale.ActivationToken, acc.Key).
				Expect(t, http.StatusOK),
		}
		for name, res := range answers {
			if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
				t.Errorf("%s: Cache-Control %q, want no-store", name, cc)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: no X-Content-Type-Options: nosniff", name)
			}
		}
	})
}
