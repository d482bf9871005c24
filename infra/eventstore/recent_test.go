package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A read of the log right after a process's commits is answered from what that process kept of
// them (recent.go). Two processes (stores) append in turn on one database; for every position and
// several limits, what each reads must be what a store that never appended reads from the
// database: the same events, in order, none skipped, or a prefix of them ending at the reader's
// own last commit.
func TestReadLogAfterCommitsReadsWhatTheLogHolds(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		a, b, fresh := eventstore.New(db), eventstore.New(db), eventstore.New(db)
		t.Cleanup(func() { a.Close(); b.Close(); fresh.Close() })
		ctx := context.Background()
		appendBy := func(s *eventstore.Store, contact string, events int) {
			t.Helper()
			m := meta
			m.RequestID = "req-" + contact
			if _, err := s.Append(ctx, m,
				domain.StreamAppend{StreamID: contact, ExpectedVersion: domain.AnyVersion, Events: tagged(contact, events)},
				domain.StreamAppend{StreamID: contact + "_other", ExpectedVersion: domain.AnyVersion, Events: tagged(contact, 1)}); err != nil {
				t.Fatal(err)
			}
		}
		appendBy(a, "ct_1", 2)
		appendBy(a, "ct_2", 1)
		appendBy(b, "ct_3", 3) // a gap in what a keeps
		appendBy(a, "ct_4", 2)
		appendBy(a, "ct_5", 1)
		appendBy(b, "ct_6", 1)
		head, err := fresh.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for after := int64(0); after <= head; after++ {
			for _, limit := range []int{1, 2, 500} {
				want, err := fresh.ReadLog(ctx, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				for name, s := range map[string]*eventstore.Store{"a": a, "b": b} {
					got, err := s.ReadLog(ctx, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					if len(want) > 0 && len(got) == 0 || len(got) > len(want) || !reflect.DeepEqual(got, want[:len(got)]) {
						t.Fatalf("%s read %d after %d (limit %d):\n%s\nthe log holds:\n%s", name, len(got), after, limit, describe(got), describe(want))
					}
				}
			}
		}

		// An append that fails (its idempotency id is taken) keeps nothing: its positions go to the
		// next append.
		keyed := meta
		keyed.IdempotencyID = "claim-1"
		for i, want := range []error{nil, domain.ErrAlreadyPerformed} {
			if _, err := a.Append(ctx, keyed, domain.StreamAppend{StreamID: fmt.Sprintf("ct_keyed_%d", i), ExpectedVersion: 0, Events: tagged("ct_keyed", 2)}); !errors.Is(err, want) {
				t.Fatalf("append %d with one idempotency id: %v, want %v", i+1, err, want)
			}
		}
		appendBy(b, "ct_after", 1)
		if head, err = fresh.Head(ctx); err != nil {
			t.Fatal(err)
		}
		for after := head - 4; after <= head; after++ {
			want, _ := fresh.ReadLog(ctx, after, 500)
			if got, err := a.ReadLog(ctx, after, 500); err != nil || !reflect.DeepEqual(got, want[:min(len(got), len(want))]) || len(want) > 0 && len(got) == 0 {
				t.Fatalf("after a failed append a read after %d:\n%s\nthe log holds:\n%s (%v)", after, describe(got), describe(want), err)
			}
		}

		// Right after its own commit, a process reads it without the database (which a cancelled
		// context would refuse); another process reads the database. Only SQLite keeps recent
		// commits: on PostgreSQL appends commit side by side, and a read waits for the horizon.
		if d == sqldb.Postgres {
			return
		}
		appendBy(a, "ct_7", 2)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		got, err := a.ReadLog(cancelled, head, 500)
		if err != nil || len(got) != 3 || got[0].Position != head+1 || got[0].StreamID != "ct_7" {
			t.Fatalf("right after its commit, a read %s, %v", describe(got), err)
		}
		if _, err := b.ReadLog(cancelled, head, 500); err == nil {
			t.Fatal("a store that did not write the events read them without the database")
		}
	})
}

func describe(events []domain.Recorded) string {
	out := ""
	for _, e := range events {
		out += fmt.Sprintf("  %d %s v%d %s %s %v\n", e.Position, e.StreamID, e.Version, e.Type, e.Data, e.Metadata)
	}
	return out
}
