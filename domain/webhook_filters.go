package domain

import "slices"

// OutboundResources are the resource ids an outbound event carries, which filters match.
type OutboundResources struct {
	FormID        string
	EventTypeID   string
	ProductID     string
	PricingTierID string
	BumpIDs       []string
}

// Match tells whether an event of that type about those resources passes the filters
// (integration-api.md section 6, "Subscription filters"): an empty list lets everything through;
// for pricingTierIds "__none__" means "do not filter by pricing option", and for bumpIds it means
// "only purchases without bumps".
func (f WebhookFilters) Match(eventType string, r OutboundResources) bool {
	switch eventType {
	case EventFormSubmitted:
		return anyOf(f.FormIDs, r.FormID)
	case EventSchedulingBooked:
		return anyOf(f.EventTypeIDs, r.EventTypeID)
	case EventCheckoutCancelScheduled, EventCheckoutSubscriptionCancelled:
		return anyOf(f.ProductIDs, r.ProductID)
	case EventCheckoutPurchased, EventCheckoutRebilled, EventCheckoutRefunded:
		if !anyOf(f.ProductIDs, r.ProductID) {
			return false
		}
		if !isNone(f.PricingTierIDs) && !anyOf(f.PricingTierIDs, r.PricingTierID) {
			return false
		}
		switch {
		case len(f.BumpIDs) == 0:
			return true
		case isNone(f.BumpIDs):
			return len(r.BumpIDs) == 0
		default:
			for _, b := range r.BumpIDs {
				if slices.Contains(f.BumpIDs, b) {
					return true
				}
			}
			return false
		}
	}
	return false
}

func anyOf(filter []string, id string) bool {
	return len(filter) == 0 || slices.Contains(filter, id)
}

func isNone(filter []string) bool {
	return len(filter) == 1 && filter[0] == filterNone
}
