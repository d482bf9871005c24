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

// A purchase whose name is only white space gives no name: the contact keeps its name
// (domain.BuyerProfile trims it to nothing), and so must the customer, which a later purchase
// "without a name keeps" (docs/checkout.md "Customer names"). Today the customer is renamed to
// the blanks, and its checkout webhooks carry customer.name "   ".
func TestHuntBlankBuyerNameKeepsTheCustomerName(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		first := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "hunt-blank@example.com", "name": "Jane Doe"})
		customerID := first.Object(t, "customer")["id"].(string)
		again := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "hunt-blank@example.com", "name": "   "})
		if got := again.Object(t, "customer")["name"]; got != "Jane Doe" {
			t.Errorf("after a purchase named %q the customer's name is %q, want \"Jane Doe\"", "   ", got)
		}
		if got := svc.API.Get(t, "/api/v1/customers/"+customerID, acc.Key).Expect(t, http.StatusOK).Object(t, "customer")["name"]; got != "Jane Doe" {
			t.Errorf("GET customer name = %q, want \"Jane Doe\"", got)
		}
		if c := contactByEmail(t, svc, acc.Key, "hunt-blank@example.com"); c["firstName"] != "Jane" || c["lastName"] != "Doe" {
			t.Errorf("contact = %v", c)
		}
	})
}
