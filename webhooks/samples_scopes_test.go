package webhooks

import (
	"slices"
	"testing"

	"github.com/funnelhq/funnel/domain"
)

// Every outbound event names a scope of the contract as the read scope of its data: samples
// from real events are shown only to a key that holds it.
func TestEveryEventHasTheReadScopeOfItsSamples(t *testing.T) {
	for _, e := range Events.events {
		if !slices.Contains(domain.AllScopes, e.readScope) {
			t.Errorf("%s has no read scope (%q)", e.name, e.readScope)
		}
	}
}
