package api_test

import (
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// Found by the billing hunt (reports/billing/FINDINGS.md). Each test fails on main.

// Withdrawn ISO 4217 codes (Deutsche Mark, Italian lira, the ECU) name no currency a price can be
// paid in, as XXX and the metals the service refuses already don't.
func TestHuntProductRefusesWithdrawnCurrencies(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for _, code := range []string{"DEM", "ITL", "XEU", "FRF"} {
			body := map[string]any{"name": "Old money " + code, "pricingTiers": []any{
				map[string]any{"name": "Once", "amount": 1000, "currency": code, "interval": "one_time"}}}
			r := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/products", "", body)
			if r.Status != http.StatusBadRequest {
				t.Errorf("a product priced in %s: %d %s, want 400 naming pricingTiers[0].currency", code, r.Status, r.Raw)
			}
		}
	})
}
