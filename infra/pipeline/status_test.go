package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// A projection is behind by the events it still has to apply, not by how far its stored
// checkpoint trails the log: one that handles none of the latest events is not behind, whether
// the pipeline runs idle or stopped (even before the saver wrote its checkpoint), and one that
// missed events while no pipeline ran is behind by exactly those it handles.
func TestStatusesCountOnlyWhatIsLeftToApply(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		all := []Projection{projections.NewContacts(db.Read), projections.NewTags(db.Read)}
		statuses := func(wantHead int64) string {
			t.Helper()
			// On PostgreSQL the head is the last position below the oldest transaction still
			// running on the server (docs/architecture.md, "The write path"): another test's
			// transaction may hold it back a moment, so wait for it, bounded.
			head, got, err := Statuses(ctx, db, all)
			for deadline := time.Now().Add(10 * time.Second); err == nil && head < wantHead && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				head, got, err = Statuses(ctx, db, all)
			}
			if err != nil {
				t.Fatal(err)
			}
			if head != wantHead {
				t.Fatalf("head %d, want %d", head, wantHead)
			}
			out := ""
			for _, st := range got {
				out += fmt.Sprintf("%s at %d behind %d; ", st.Name, st.Position, st.Behind)
			}
			return out
		}

		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "tag_a", Events: []domain.Event{
			domain.TagCreated{TagID: "tag_a", AccountID: "acc_1", Name: "A"},
		}}); err != nil {
			t.Fatal(err)
		}
		if got, want := statuses(1), "contacts at 1 behind 0; tags at 0 behind 1; "; got != want {
			t.Fatalf("before any pipeline ran: %s, want %s", got, want)
		}

		r := startWith(t, db, s, all...)
		appendContacts(t, s, 0, 4) // positions 2..13: nothing for tags
		if err := r.p.Tracker().WaitReadModels(ctx, 13); err != nil {
			t.Fatal(err)
		}
		if got, want := statuses(13), "contacts at 13 behind 0; tags at 13 behind 0; "; got != want {
			t.Fatalf("idle: %s, want %s", got, want)
		}
		r.stop()
		if got, want := statuses(13), "contacts at 13 behind 0; tags at 13 behind 0; "; got != want {
			t.Fatalf("stopped: %s, want %s", got, want)
		}
		if checkpoint(t, db, "tags") != 13 {
			t.Fatalf("a clean stop left the idle tags checkpoint at %d", checkpoint(t, db, "tags"))
		}

		appendContacts(t, s, 4, 2) // positions 14..19, while no pipeline runs
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "tag_b", Events: []domain.Event{
			domain.TagCreated{TagID: "tag_b", AccountID: "acc_1", Name: "B"},
		}}); err != nil { // position 20
			t.Fatal(err)
		}
		appendContacts(t, s, 6, 1) // positions 21..23
		if got, want := statuses(23), "contacts at 13 behind 9; tags at 19 behind 1; "; got != want {
			t.Fatalf("after writes no pipeline applied: %s, want %s", got, want)
		}
	})
}
