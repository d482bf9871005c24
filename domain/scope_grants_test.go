package domain

import "testing"

// A key issued with every scope of its day carries the scopes added since; any other key
// carries only what it lists.
func TestGrantsTheLaterScopesToAKeyThatHadEveryScope(t *testing.T) {
	for _, c := range []struct {
		name   string
		scopes []Scope
		scope  Scope
		want   bool
	}{
		{"every scope before events:read", everyScopeBefore24, ScopeEventsRead, true},
		{"every scope before webhooks:read", everyScopeBefore24, ScopeWebhooksRead, true},
		{"every scope now", AllScopes, ScopeWebhooksRead, true},
		{"one scope less", everyScopeBefore24[1:], ScopeEventsRead, false},
		{"a listed scope", []Scope{ScopeContactsRead}, ScopeContactsRead, true},
		{"an unlisted scope", []Scope{ScopeContactsRead}, ScopeContactsWrite, false},
		{"events:read alone", []Scope{ScopeEventsRead}, ScopeCheckoutRead, false},
	} {
		if got := Grants(c.scopes, c.scope); got != c.want {
			t.Errorf("%s: Grants(%s) = %v, want %v", c.name, c.scope, got, c.want)
		}
	}
}
