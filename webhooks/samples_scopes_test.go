package webhooks

import "testing"

// Every outbound event names the read scope of its data: one left out would only ever show
// made-up samples, which is safe but surely not meant.
func TestEveryEventHasTheReadScopeOfItsSamples(t *testing.T) {
	for _, e := range Events.events {
		if readScopes[e.name] == "" {
			t.Errorf("%s has no read scope in readScopes", e.name)
		}
	}
	if len(readScopes) != len(Events.events) {
		t.Errorf("readScopes names %d events, the catalogue has %d", len(readScopes), len(Events.events))
	}
}
