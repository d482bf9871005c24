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
	// ScopeContactsErase erases contacts (decisions.md "Erasure"): not implied by contacts:write,
	// since it destroys what no write can bring back.
	ScopeContactsErase Scope = "contacts:erase"
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
	ScopeContactsErase, ScopeEventsRead, ScopeWebhooksRead,
}

// everyScopeBefore24 is AllScopes as it was before the scopes added beside the contract
// (contacts:erase, events:read, webhooks:read): the list a key issued then without a scope list
// was given. Such a key carries every scope, later ones included (decisions.md "Scopes added"),
// so a key holding all of these is taken for one (Grants).
var everyScopeBefore24 = []Scope{
	ScopeFormsRead, ScopeFormsWrite, ScopeSchedulingRead, ScopeSchedulingWrite,
	ScopeContactsRead, ScopeContactsWrite, ScopeTagsRead, ScopeTagsWrite,
	ScopeCheckoutRead, ScopeCheckoutWrite, ScopeCRMRead, ScopeCRMWrite, ScopeWebhooksWrite,
}

// Grants tells whether a key holding scopes may act under scope s: it holds s, or it holds every
// scope there was when it was issued without a list (everyScopeBefore24), which stands for
// every scope.
func Grants(scopes []Scope, s Scope) bool {
	held := make(map[Scope]bool, len(scopes))
	for _, have := range scopes {
		held[have] = true
	}
	if held[s] {
		return true
	}
	for _, old := range everyScopeBefore24 {
		if !held[old] {
			return false
		}
	}
	return true
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
