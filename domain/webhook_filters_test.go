package domain

import "testing"

func TestWebhookFiltersNormalized(t *testing.T) {
	f, err := WebhookFilters{FormIDs: []string{" f1", "f1"}, BumpIDs: []string{"__none__"}}.normalized()
	if err != nil || len(f.FormIDs) != 1 || f.FormIDs[0] != "f1" || f.ProductIDs == nil {
		t.Fatalf("normalized = %+v, %v", f, err)
	}
	for name, bad := range map[string]WebhookFilters{
		"none on forms": {FormIDs: []string{"__none__"}},
		"none with ids": {BumpIDs: []string{"__none__", "b1"}},
		"empty id":      {ProductIDs: []string{""}},
		"too many":      {CalendarIDs: make([]string, 101)},
	} {
		if _, err := bad.normalized(); KindOf(err) != KindInvalid {
			t.Errorf("%s: err = %v, want invalid", name, err)
		}
	}
}
