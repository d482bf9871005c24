package domain

import "fmt"

// Scope is a permission an API key carries (integration-api.md section 5).
type Scope string

// The scopes of the integration API.
const (
	ScopeFormsRead       Scope = "forms:read"
	ScopeFormsWrite      Scope = "forms:write"
	ScopeSchedulingRead  Scope = "scheduling:read"
	ScopeSchedulingWrite Scope = "scheduling:write"
	ScopeContactsRead    Scope = "contacts:read"
	ScopeContactsWrite   Scope = "contacts:write"
	ScopeTagsRead        Scope = "tags:read"
	ScopeTagsWrite       Scope = "tags:write"
	ScopeCheckoutRead    Scope = "checkout:read"
	ScopeCheckoutWrite   Scope = "checkout:write"
	ScopeCRMRead         Scope = "crm:read"
	ScopeCRMWrite        Scope = "crm:write"
	ScopeWebhooksWrite   Scope = "webhooks:write"
	// ScopeEventsRead reads the event feed (decisions.md "Event feed").
	ScopeEventsRead Scope = "events:read"
	// ScopeWebhooksRead lists the account's webhook subscriptions and their deliveries.
	ScopeWebhooksRead Scope = "webhooks:read"
)

// AllScopes is every scope, in the contract's order: what an account's default key carries.
var AllScopes = []Scope{
	ScopeFormsRead, ScopeFormsWrite, ScopeSchedulingRead, ScopeSchedulingWrite,
	ScopeContactsRead, ScopeContactsWrite, ScopeTagsRead, ScopeTagsWrite,
	ScopeCheckoutRead, ScopeCheckoutWrite, ScopeCRMRead, ScopeCRMWrite, ScopeWebhooksWrite,
	ScopeEventsRead, ScopeWebhooksRead,
}

// ParseScopes validates scope names, dropping duplicates. A nil list (scopes left out) means
// every scope; an empty one is refused, since a key that may do nothing is surely a mistake and
// must not silently become a key that may do everything.
func ParseScopes(names []string) ([]Scope, error) {
	if names == nil {
		return append([]Scope(nil), AllScopes...), nil
	}
	if len(names) == 0 {
		return nil, InvalidField("scopes", "scopes must name at least one scope; leave scopes out for every scope")
	}
	known := make(map[Scope]bool, len(AllScopes))
	for _, s := range AllScopes {
		known[s] = true
	}
	seen := map[Scope]bool{}
	var out []Scope
	for i, n := range names {
		s := Scope(n)
		if !known[s] {
			return nil, InvalidField(fmt.Sprintf("scopes[%d]", i), "unknown scope %q", n)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}
