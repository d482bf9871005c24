package webhooks

import (
	"slices"

	"github.com/funnelhq/funnel/domain"
)

// resources are the ids an outbound event is about: what subscription filters match, and what
// orders its deliveries. A payload mapper returns them beside the payload.
type resources struct {
	formID        string
	eventTypeID   string
	productID     string
	pricingTierID string
	bumpIDs       []string
	// orderingKey names the resource whose events must reach a subscription in order (a checkout
	// subscription); empty for independent events.
	orderingKey string
}

// A filter is one kind of subscription filter (integration-api.md section 6, "Subscription
// filters"): it tells whether an event about some resources passes a subscription's filters.
// Every outbound event declares the filters that apply to it in the table (events.go); the
// others do not narrow it (a formIds filter lets every booking through).
// member is the filter's member in a subscription's filters (the documents list it per event).
type filter struct {
	member string
	passes func(f domain.WebhookFilters, r resources) bool
}

var (
	// byForm applies formIds: empty lets every form through.
	byForm = filter{"formIds", func(f domain.WebhookFilters, r resources) bool { return anyOf(f.FormIDs, r.formID) }}

	// byEventType applies eventTypeIds: empty lets every calendar through.
	byEventType = filter{"eventTypeIds", func(f domain.WebhookFilters, r resources) bool { return anyOf(f.CalendarIDs, r.eventTypeID) }}

	// byProduct applies productIds: empty lets every checkout through.
	byProduct = filter{"productIds", func(f domain.WebhookFilters, r resources) bool { return anyOf(f.ProductIDs, r.productID) }}

	// byPricingTier applies pricingTierIds: empty lets every pricing option of the selected
	// checkouts through, and so does "__none__" ("do not filter by pricing option", to be used
	// with specific bumpIds).
	byPricingTier = filter{"pricingTierIds", func(f domain.WebhookFilters, r resources) bool {
		return isNone(f.PricingTierIDs) || anyOf(f.PricingTierIDs, r.pricingTierID)
	}}

	// byBump applies bumpIds: empty lets purchases with or without bumps through, "__none__"
	// only those without bumps (the base plan alone), and ids those with one of the bumps.
	byBump = filter{"bumpIds", func(f domain.WebhookFilters, r resources) bool {
		switch {
		case len(f.BumpIDs) == 0:
			return true
		case isNone(f.BumpIDs):
			return len(r.bumpIDs) == 0
		}
		return slices.ContainsFunc(r.bumpIDs, func(b string) bool { return slices.Contains(f.BumpIDs, b) })
	}}
)

func anyOf(filter []string, id string) bool {
	return len(filter) == 0 || slices.Contains(filter, id)
}

func isNone(filter []string) bool {
	return len(filter) == 1 && filter[0] == domain.FilterNone
}
