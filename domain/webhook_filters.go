package domain

import (
	"fmt"
	"strings"
)

// FilterNone in pricingTierIds means "do not filter by pricing option", and in bumpIds "only
// purchases without bumps" (integration-api.md section 6, "Subscription filters").
const FilterNone = "__none__"

const maxFilterIDs = 100

// WebhookFilters narrow a subscription to some resources (integration-api.md section 6). Which
// filter applies to which outbound event, and how it matches, is the webhooks package's table.
type WebhookFilters struct {
	FormIDs        []string `json:"formIds"`
	CalendarIDs    []string `json:"eventTypeIds"`
	ProductIDs     []string `json:"productIds"`
	PricingTierIDs []string `json:"pricingTierIds"`
	BumpIDs        []string `json:"bumpIds"`
}

// normalized returns the filters with empty lists rather than nil ones, and checks their size
// and values: "__none__" is meaningful only for pricingTierIds and bumpIds.
func (f WebhookFilters) normalized() (WebhookFilters, error) {
	lists := []struct {
		name      string
		ids       *[]string
		allowNone bool
	}{{"formIds", &f.FormIDs, false}, {"eventTypeIds", &f.CalendarIDs, false}, {"productIds", &f.ProductIDs, false},
		{"pricingTierIds", &f.PricingTierIDs, true}, {"bumpIds", &f.BumpIDs, true}}
	for _, l := range lists {
		if len(*l.ids) > maxFilterIDs {
			return f, InvalidField(l.name, "%s: at most %d ids", l.name, maxFilterIDs)
		}
		seen := map[string]bool{}
		out := []string{}
		for i, id := range *l.ids {
			id = strings.TrimSpace(id)
			if id == "" || len(id) > MaxNameLength {
				return f, InvalidField(fmt.Sprintf("%s[%d]", l.name, i), "%s: ids must be non-empty strings of at most %d characters", l.name, MaxNameLength)
			}
			if id == FilterNone && !l.allowNone {
				return f, InvalidField(fmt.Sprintf("%s[%d]", l.name, i), "%s: __none__ is only meaningful for pricingTierIds and bumpIds", l.name)
			}
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
		if seen[FilterNone] && len(out) > 1 {
			return f, InvalidField(l.name, "%s: __none__ cannot be combined with ids", l.name)
		}
		*l.ids = out
	}
	return f, nil
}
