package domain

import "testing"

func TestWebhookFiltersMatch(t *testing.T) {
	purchase := func(product, tier string, bumps ...string) OutboundResources {
		return OutboundResources{ProductID: product, PricingTierID: tier, BumpIDs: bumps}
	}
	cases := []struct {
		name    string
		filters WebhookFilters
		event   string
		r       OutboundResources
		want    bool
	}{
		{"no filters, form", WebhookFilters{}, EventFormSubmitted, OutboundResources{FormID: "f1"}, true},
		{"form listed", WebhookFilters{FormIDs: []string{"f1"}}, EventFormSubmitted, OutboundResources{FormID: "f1"}, true},
		{"form not listed", WebhookFilters{FormIDs: []string{"f2"}}, EventFormSubmitted, OutboundResources{FormID: "f1"}, false},
		{"form filter ignores bookings", WebhookFilters{FormIDs: []string{"f2"}}, EventSchedulingBooked, OutboundResources{EventTypeID: "e1"}, true},
		{"calendar listed", WebhookFilters{EventTypeIDs: []string{"e1"}}, EventSchedulingBooked, OutboundResources{EventTypeID: "e1"}, true},
		{"calendar not listed", WebhookFilters{EventTypeIDs: []string{"e2"}}, EventSchedulingBooked, OutboundResources{EventTypeID: "e1"}, false},
		{"product listed", WebhookFilters{ProductIDs: []string{"p1"}}, EventCheckoutPurchased, purchase("p1", "t1"), true},
		{"product not listed", WebhookFilters{ProductIDs: []string{"p2"}}, EventCheckoutRebilled, purchase("p1", "t1"), false},
		{"product filter on cancellation", WebhookFilters{ProductIDs: []string{"p2"}}, EventCheckoutSubscriptionCancelled, purchase("p1", ""), false},
		{"tier filter ignored on cancellation", WebhookFilters{PricingTierIDs: []string{"t9"}}, EventCheckoutCancelScheduled, purchase("p1", "t1"), true},
		{"all tiers of selected checkout", WebhookFilters{ProductIDs: []string{"p1"}}, EventCheckoutPurchased, purchase("p1", "t2", "b1"), true},
		{"tier listed", WebhookFilters{PricingTierIDs: []string{"t1"}}, EventCheckoutPurchased, purchase("p1", "t1"), true},
		{"tier not listed", WebhookFilters{PricingTierIDs: []string{"t1"}}, EventCheckoutRefunded, purchase("p1", "t2"), false},
		{"specific tier, bumps none: base plan only", WebhookFilters{PricingTierIDs: []string{"t1"}, BumpIDs: []string{"__none__"}}, EventCheckoutPurchased, purchase("p1", "t1"), true},
		{"specific tier, bumps none: with a bump", WebhookFilters{PricingTierIDs: []string{"t1"}, BumpIDs: []string{"__none__"}}, EventCheckoutPurchased, purchase("p1", "t1", "b1"), false},
		{"pricing none, specific bump: any tier with it", WebhookFilters{PricingTierIDs: []string{"__none__"}, BumpIDs: []string{"b1"}}, EventCheckoutPurchased, purchase("p1", "t7", "b2", "b1"), true},
		{"pricing none, specific bump: without it", WebhookFilters{PricingTierIDs: []string{"__none__"}, BumpIDs: []string{"b1"}}, EventCheckoutPurchased, purchase("p1", "t7", "b2"), false},
		{"bumps empty: with or without", WebhookFilters{BumpIDs: []string{}}, EventCheckoutPurchased, purchase("p1", "t1", "b3"), true},
	}
	for _, tc := range cases {
		if got := tc.filters.Match(tc.event, tc.r); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWebhookFiltersNormalized(t *testing.T) {
	f, err := WebhookFilters{FormIDs: []string{" f1", "f1"}, BumpIDs: []string{"__none__"}}.normalized()
	if err != nil || len(f.FormIDs) != 1 || f.FormIDs[0] != "f1" || f.ProductIDs == nil {
		t.Fatalf("normalized = %+v, %v", f, err)
	}
	for name, bad := range map[string]WebhookFilters{
		"none on forms": {FormIDs: []string{"__none__"}},
		"none with ids": {BumpIDs: []string{"__none__", "b1"}},
		"empty id":      {ProductIDs: []string{""}},
		"too many":      {EventTypeIDs: make([]string, 101)},
	} {
		if _, err := bad.normalized(); KindOf(err) != KindInvalid {
			t.Errorf("%s: err = %v, want invalid", name, err)
		}
	}
}
