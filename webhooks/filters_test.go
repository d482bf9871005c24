package webhooks

import (
	"testing"

	"github.com/funnelhq/funnel/domain"
)

// Each outbound event is matched by the filters the table declares for it (integration-api.md
// section 6, "Subscription filters"). The cases were domain.WebhookFilters.Match's.
func TestWebhookFiltersMatch(t *testing.T) {
	purchase := func(product, tier string, bumps ...string) resources {
		return resources{productID: product, pricingTierID: tier, bumpIDs: bumps}
	}
	cases := []struct {
		name    string
		filters domain.WebhookFilters
		event   string
		r       resources
		want    bool
	}{
		{"no filters, form", domain.WebhookFilters{}, "form.submitted", resources{formID: "f1"}, true},
		{"form listed", domain.WebhookFilters{FormIDs: []string{"f1"}}, "form.submitted", resources{formID: "f1"}, true},
		{"form not listed", domain.WebhookFilters{FormIDs: []string{"f2"}}, "form.submitted", resources{formID: "f1"}, false},
		{"form filter ignores bookings", domain.WebhookFilters{FormIDs: []string{"f2"}}, "scheduling.booked", resources{eventTypeID: "e1"}, true},
		{"calendar listed", domain.WebhookFilters{CalendarIDs: []string{"e1"}}, "scheduling.booked", resources{eventTypeID: "e1"}, true},
		{"calendar not listed", domain.WebhookFilters{CalendarIDs: []string{"e2"}}, "scheduling.booked", resources{eventTypeID: "e1"}, false},
		{"product listed", domain.WebhookFilters{ProductIDs: []string{"p1"}}, "checkout.purchased", purchase("p1", "t1"), true},
		{"product not listed", domain.WebhookFilters{ProductIDs: []string{"p2"}}, "checkout.rebilled", purchase("p1", "t1"), false},
		{"product filter on cancellation", domain.WebhookFilters{ProductIDs: []string{"p2"}}, "checkout.subscription_cancelled", purchase("p1", ""), false},
		{"tier filter ignored on cancellation", domain.WebhookFilters{PricingTierIDs: []string{"t9"}}, "checkout.subscription_cancel_scheduled", purchase("p1", "t1"), true},
		{"all tiers of selected checkout", domain.WebhookFilters{ProductIDs: []string{"p1"}}, "checkout.purchased", purchase("p1", "t2", "b1"), true},
		{"tier listed", domain.WebhookFilters{PricingTierIDs: []string{"t1"}}, "checkout.purchased", purchase("p1", "t1"), true},
		{"tier not listed", domain.WebhookFilters{PricingTierIDs: []string{"t1"}}, "checkout.refunded", purchase("p1", "t2"), false},
		{"specific tier, bumps none: base plan only", domain.WebhookFilters{PricingTierIDs: []string{"t1"}, BumpIDs: []string{"__none__"}}, "checkout.purchased", purchase("p1", "t1"), true},
		{"specific tier, bumps none: with a bump", domain.WebhookFilters{PricingTierIDs: []string{"t1"}, BumpIDs: []string{"__none__"}}, "checkout.purchased", purchase("p1", "t1", "b1"), false},
		{"pricing none, specific bump: any tier with it", domain.WebhookFilters{PricingTierIDs: []string{"__none__"}, BumpIDs: []string{"b1"}}, "checkout.purchased", purchase("p1", "t7", "b2", "b1"), true},
		{"pricing none, specific bump: without it", domain.WebhookFilters{PricingTierIDs: []string{"__none__"}, BumpIDs: []string{"b1"}}, "checkout.purchased", purchase("p1", "t7", "b2"), false},
		{"bumps empty: with or without", domain.WebhookFilters{BumpIDs: []string{}}, "checkout.purchased", purchase("p1", "t1", "b3"), true},
	}
	for _, tc := range cases {
		event, ok := Events.lookup(tc.event)
		if !ok {
			t.Fatalf("%s: %s is not in the table", tc.name, tc.event)
		}
		if got := event.matches(tc.filters, tc.r); got != tc.want {
			t.Errorf("%s: matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}
