package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A read of the log right after a process's commits is answered from what that process kept of
// them (recent.go). Two processes (stores) append in turn on one database; for every position and
// several limits, what each reads must be what the log holds there: the same events, in order,
// none skipped, or a prefix of them ending before another process's position.
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
		// logHolds is what the table holds after a position, committed: the reference. A read of
		// the database through ReadLog may lag behind it on PostgreSQL, held back by any
		// transaction on the server, so the test first waits for that horizon to pass the end.
		logHolds := func(after int64, limit int) []domain.Recorded {
			t.Helper()
			events, err := fresh.ReadRange(ctx, after, 1<<62, []string{"TagApplied"})
			if err != nil {
				t.Fatal(err)
			}
			return events[:min(limit, len(events))]
		}
		end := func() int64 {
			t.Helper()
			var last int64
			if err := db.Read.QueryRow(`SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&last); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if horizon, err := db.LogHead(ctx); err != nil || horizon >= last {
					break
				}
			}
			return last
		}
		appendBy(a, "ct_1", 2)
		appendBy(a, "ct_2", 1)
		appendBy(b, "ct_3", 3) // a gap in what a keeps
		appendBy(a, "ct_4", 2)
		appendBy(a, "ct_5", 1)
		appendBy(b, "ct_6", 1)
		head := end()
		for after := int64(0); after <= head; after++ {
			for _, limit := range []int{1, 2, 500} {
				want := logHolds(after, limit)
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

		// An append that fails (its idempotency id is taken) keeps nothing: on SQLite its positions
		// go to the next append, on PostgreSQL they stay a gap, passed over.
		keyed := meta
		keyed.IdempotencyID = "claim-1"
		for i, want := range []error{nil, domain.ErrAlreadyPerformed} {
			if _, err := a.Append(ctx, keyed, domain.StreamAppend{StreamID: fmt.Sprintf("ct_keyed_%d", i), ExpectedVersion: 0, Events: tagged("ct_keyed", 2)}); !errors.Is(err, want) {
				t.Fatalf("append %d with one idempotency id: %v, want %v", i+1, err, want)
			}
		}
		appendBy(a, "ct_after", 1)
		head = end()
		for after := head - 6; after <= head; after++ {
			want := logHolds(after, 500)
			if got, err := a.ReadLog(ctx, after, 500); err != nil || !reflect.DeepEqual(got, want[:min(len(got), len(want))]) || len(want) > 0 && len(got) == 0 {
				t.Fatalf("after a failed append a read after %d:\n%s\nthe log holds:\n%s (%v)", after, describe(got), describe(want), err)
			}
		}

		// Right after its own commit, a process reads it without the database (which a cancelled
		// context would refuse); another process reads the database.
		appendBy(a, "ct_7", 2)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		got, err := a.ReadLog(cancelled, head, 500)
		if err != nil || len(got) != 3 || got[0].StreamID != "ct_7" {
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

// gate is an inline projection that holds the append of stream "ct_slow" open inside its
// transaction until told how to end it: with nil it commits, with an error it rolls back.
type gate struct {
	entered chan struct{}
	end     chan error
}

func (gate) Name() string          { return "gate" }
func (gate) Handles(t string) bool { return t == "TagApplied" }
func (g gate) ApplyIn(_ context.Context, _ sqldb.Applier, events []domain.Recorded) error {
	for _, e := range events {
		if e.StreamID == "ct_slow" {
			g.entered <- struct{}{}
			return <-g.end
		}
	}
	return nil
}

// On PostgreSQL a process's appends commit side by side, so one can commit past another still
// running, and the relay's read from memory (recent.go) must stop where that one is: it returns
// nothing past an append still open, and once that append rolls back, passes over its positions
// (they are never handed out again) to the commits after them. Every read is checked against
// what the log holds. On SQLite the one writer commits in order; a rolled-back append's positions
// go to the next append there.
func TestReadLogFromMemoryStopsAtThisProcessesOpenAppends(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		s, fresh := eventstore.New(db), eventstore.New(db)
		t.Cleanup(func() { s.Close(); fresh.Close() })
		g := gate{entered: make(chan struct{}, 1), end: make(chan error)}
		s.SetInline(g)
		t.Cleanup(func() { close(g.end) }) // before s.Close: a test that failed lets the append end
		ctx := context.Background()
		appendTo := func(stream string) (int64, error) {
			return s.Append(ctx, meta, domain.StreamAppend{StreamID: stream, ExpectedVersion: 0, Events: tagged(stream, 2)})
		}
		readsAsTheLog := func(after int64, wantPositions ...int64) {
			t.Helper()
			got, err := s.ReadLog(ctx, after, 10)
			if err != nil {
				t.Fatal(err)
			}
			var positions []int64
			for _, e := range got {
				positions = append(positions, e.Position)
			}
			if !reflect.DeepEqual(positions, wantPositions) {
				t.Fatalf("read after %d: positions %v, want %v", after, positions, wantPositions)
			}
			// What the table holds now, committed: the database's own ReadLog may lag behind it,
			// held back by any transaction running on the server.
			if len(got) > 0 {
				committed, err := fresh.ReadRange(ctx, after, got[len(got)-1].Position, []string{"TagApplied"})
				if err != nil || !reflect.DeepEqual(got, committed) {
					t.Fatalf("read after %d from memory:\n%s\nthe log holds:\n%s (%v)", after, describe(got), describe(committed), err)
				}
			}
		}
		if _, err := appendTo("ct_first"); err != nil {
			t.Fatal(err)
		}
		readsAsTheLog(0, 1, 2)

		for round, end := range []error{errors.New("the gate refuses"), nil} {
			slow := make(chan error, 1)
			go func() {
				_, err := appendTo("ct_slow")
				slow <- err
			}()
			<-g.entered // the slow append holds its positions, its transaction open
			if d == sqldb.SQLite {
				g.end <- end
				if err := <-slow; (err == nil) != (end == nil) {
					t.Fatalf("round %d: slow append: %v", round, err)
				}
				continue
			}
			head := s.LastCommitted()
			past, err := appendTo(fmt.Sprintf("ct_past_%d", round))
			if err != nil {
				t.Fatal(err)
			}
			readsAsTheLog(head) // nothing past the open append
			// Memory knows the position after is its own open append's: no database is asked
			// (a cancelled context would fail it) until the append's end signals.
			wake, stop := s.Notify()
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if got, err := s.ReadLog(cancelled, head, 10); err != nil || len(got) != 0 {
				t.Fatalf("round %d: a read past its own open append: %s, %v; want nothing, from memory", round, describe(got), err)
			}
			g.end <- end
			if err := <-slow; (err == nil) != (end == nil) {
				t.Fatalf("round %d: slow append: %v", round, err)
			}
			select {
			case <-wake:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: the open append ended and the readers were not told", round)
			}
			stop()
			if end != nil {
				readsAsTheLog(head, past-1, past) // its positions passed over
			} else {
				readsAsTheLog(head, head+1, head+2, past-1, past)
			}
		}
	})
}

// An append whose every request is refused commits no event, yet on PostgreSQL it took
// positions, which the relay may be waiting on (ReadLog answers nothing past this process's open
// append): its end wakes the readers too, and a read passes over those positions.
func TestAnAppendRefusedWholeWakesTheReaders(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		t.Cleanup(s.Close)
		ctx := context.Background()
		head, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_1", ExpectedVersion: 0, Events: tagged("ct_1", 1)})
		if err != nil {
			t.Fatal(err)
		}
		wake, stop := s.Notify()
		defer stop()
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_1", ExpectedVersion: 5, Events: tagged("ct_1", 2)}); !errors.Is(err, domain.ErrWrongVersion) {
			t.Fatalf("an append at a stale version: %v, want %v", err, domain.ErrWrongVersion)
		}
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatal("an append refused whole ended and the readers were not told")
		}
		next, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_2", ExpectedVersion: 0, Events: tagged("ct_2", 1)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadLog(ctx, head, 10)
		if err != nil || len(got) != 1 || got[0].Position != next {
			t.Fatalf("a read after the refused append: %s, %v; want the next append's event at %d", describe(got), err, next)
		}
	})
}

// An append of this process that stays open while other processes append more than the memory
// of recent positions keeps (keptRecent) still settles its positions when it ends: the relay,
// which reads nothing past this process's own open append without asking the database, then
// reads on from it. SQLite has one writer: no append commits past an open one.
func TestAnOpenAppendOutlivedByOtherProcessesStillSettles(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		if d == sqldb.SQLite {
			return
		}
		db := sqldbtest.Open(t, d)
		s, other := eventstore.New(db), eventstore.New(db)
		t.Cleanup(func() { s.Close(); other.Close() })
		g := gate{entered: make(chan struct{}, 1), end: make(chan error)}
		s.SetInline(g)
		other.SetInline(g) // every store of a database applies the same inline projections; only ct_slow waits
		t.Cleanup(func() { close(g.end) })
		ctx := context.Background()
		// Each store's first append catches its inline projections up, which waits for every
		// append open: the other's is done before the slow one opens.
		if _, err := other.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_other_first", ExpectedVersion: 0, Events: tagged("ct_other_first", 1)}); err != nil {
			t.Fatal(err)
		}
		head, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_first", ExpectedVersion: 0, Events: tagged("ct_first", 1)})
		if err != nil {
			t.Fatal(err)
		}
		slow := make(chan error, 1)
		go func() {
			_, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_slow", ExpectedVersion: 0, Events: tagged("ct_slow", 2)})
			slow <- err
		}()
		<-g.entered
		if _, err := other.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_other", ExpectedVersion: 0, Events: tagged("ct_other", 300)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_after", ExpectedVersion: 0, Events: tagged("ct_after", 1)}); err != nil {
			t.Fatal(err)
		}
		g.end <- nil
		if err := <-slow; err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			got, err := s.ReadLog(ctx, head, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > 0 {
				if got[0].StreamID != "ct_slow" || got[0].Position != head+1 {
					t.Fatalf("the read after %d begins with %s at %d, want ct_slow at %d", head, got[0].StreamID, got[0].Position, head+1)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the read after %d still returns nothing 10 s after the open append committed", head)
			}
		}
	})
}
