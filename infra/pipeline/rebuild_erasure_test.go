package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// README: `funnel projections rebuild contacts` rebuilds the read model from the log, and
// decisions.md: "Rebuilding any read model after an erasure brings nothing back". A contact
// created in one window of the rebuild and erased in a later one is written by the first window
// with its email read as null, under a key of its own until its ContactErased deletes the row;
// meanwhile a new contact of the same email takes the real key. The rebuild must swap in the live
// rows on both databases, whether a window writes its rows as a few statements or as column
// arrays (more than 50 rows).
func TestContactsRebuildAfterAnErasureInALaterWindow(t *testing.T) {
	defer func(w int64) { rebuildWindow = w }(rebuildWindow)
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		_, sealer := sealingtest.NewKey(t)
		s := eventstore.New(db)
		defer s.Close()
		s.SealPersonalData(sealer)
		appendContacts(t, s, 0, 60) // positions 1 to 180
		const erased, again = "ct_0000", "ct_again"
		if _, err := s.Append(ctx, meta,
			domain.StreamAppend{StreamID: erased, ExpectedVersion: domain.AnyVersion, Events: []domain.Event{
				domain.ContactErased{ContactID: erased, AccountID: "acc_1", ErasedAt: time.Now()}}},
		); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: again, Events: []domain.Event{
			domain.ContactCreated{ContactID: again, AccountID: "acc_1", Email: erased + "@example.com", CustomFields: map[string]string{}}}},
		); err != nil {
			t.Fatal(err)
		}
		start(t, db, s).stop()
		before := dump(t, db)

		// Windows of 4 contacts, then one of all 60 (the erasure, at 181, opens the second).
		for _, window := range []int64{10, 180} {
			t.Run(fmt.Sprintf("window %d", window), func(t *testing.T) {
				rebuildWindow = window
				if _, err := db.Write.Exec(`DELETE FROM contacts`); err != nil { // only the rebuild can put them back
					t.Fatal(err)
				}
				if _, err := Rebuild(ctx, db, s, projections.NewContacts(db.Read), nil); err != nil {
					t.Fatalf("rebuild of contacts after an erasure in a later window: %v", err)
				}
				if after := dump(t, db); after != before {
					t.Fatalf("the rebuilt contacts differ from the live ones:\nrebuilt\n%s\nlive\n%s", after, before)
				}
			})
		}
	})
}
