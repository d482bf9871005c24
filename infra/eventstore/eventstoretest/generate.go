// Package eventstoretest writes synthetic logs for tests and benchmarks of the readers of the log
// (rebuilds, projections): the shape of real traffic, appended through the event store itself so
// that positions, versions and metadata are exactly what the service would have written.
package eventstoretest

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
)

// EventsPerContact is how many events Generate writes per contact: the contact created with two
// tags applied (an upsert), and for every other contact a lead created and moved.
const EventsPerContact = 4 // on average: 3, and 2 every other contact

// appendsPerCall bounds the contacts of one append: a few thousand events a transaction keep the
// generator fast without one giant statement.
const appendsPerCall = 500

// Generate appends contacts numbered from..from+n-1 of an account (ids ct_gNNNNNNNN), each
// created with tags tag_a and tag_b applied; every even-numbered one also gets a lead, created then
// moved. It returns the position of the last event.
func Generate(ctx context.Context, s *eventstore.Store, accountID string, from, n int) (int64, error) {
	meta := domain.Metadata{AccountID: accountID, Actor: string(domain.OperatorActor)}
	var last int64
	for start := from; start < from+n; start += appendsPerCall {
		var appends []domain.StreamAppend
		for i := start; i < min(start+appendsPerCall, from+n); i++ {
			appends = append(appends, Contact(accountID, i)...)
		}
		pos, err := s.Append(ctx, meta, appends...)
		if err != nil {
			return 0, fmt.Errorf("eventstoretest: generate contacts from %d: %w", start, err)
		}
		last = pos
	}
	return last, nil
}

// Contact returns the appends of synthetic contact i of an account: its stream, and its lead's for
// an even i.
func Contact(accountID string, i int) []domain.StreamAppend {
	id := fmt.Sprintf("ct_g%08d", i)
	out := []domain.StreamAppend{{StreamID: id, Events: []domain.Event{
		domain.ContactCreated{ContactID: id, AccountID: accountID, Email: id + "@example.com", FirstName: "Ada",
			CustomFields: map[string]string{"cf_plan": "pro"}},
		domain.TagApplied{ContactID: id, TagID: "tag_a"},
		domain.TagApplied{ContactID: id, TagID: "tag_b"},
	}}}
	if i%2 == 0 {
		lead := fmt.Sprintf("ld_g%08d", i)
		out = append(out, domain.StreamAppend{StreamID: lead, Events: []domain.Event{
			domain.LeadCreated{LeadID: lead, AccountID: accountID, CRMID: "crm_1", StageID: "st_new", ContactID: id, Title: "Deal " + id},
			domain.LeadMoved{LeadID: lead, ContactID: id, CRMID: "crm_1", FromStageID: "st_new", ToStageID: "st_won"},
		}})
	}
	return out
}
