package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/eventstore/eventstoretest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The contract every storage mode of the event log must keep.

func newStore(t *testing.T, dialect sqldb.Dialect) (*eventstore.Store, *sqldb.DB) {
	t.Helper()
	db := sqldbtest.Open(t, dialect)
	s := eventstore.New(db)
	t.Cleanup(s.Close)
	return s, db
}

var meta = domain.Metadata{AccountID: "acc_test", Actor: "operator", RequestID: "req-1", CorrelationID: "corr-1"}

func tagged(contact string, n int) []domain.Event {
	out := make([]domain.Event, n)
	for i := range out {
		out[i] = domain.TagApplied{ContactID: contact, TagID: fmt.Sprintf("tag_%d", i), TagName: "t"}
	}
	return out
}

func TestAppendAndRead(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx := context.Background()
		created := domain.ContactCreated{ContactID: "ct_a", AccountID: "acc_test", Email: "A@x.io", CustomFields: map[string]string{}}
		pos, err := s.Append(ctx, meta,
			domain.StreamAppend{StreamID: "ct_a", ExpectedVersion: 0, Events: []domain.Event{created, domain.TagApplied{ContactID: "ct_a", TagID: "tag_1"}}},
			domain.StreamAppend{StreamID: "tag_1", ExpectedVersion: 0, Events: []domain.Event{domain.TagCreated{TagID: "tag_1", AccountID: "acc_test", Name: "VIP", Automations: []domain.Automation{}}}},
		)
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		if pos != 3 {
			t.Fatalf("last position = %d, want 3", pos)
		}
		stream, err := s.ReadStream(ctx, "ct_a")
		if err != nil {
			t.Fatal(err)
		}
		if len(stream) != 2 || stream[0].Version != 1 || stream[1].Version != 2 {
			t.Fatalf("stream = %+v", stream)
		}
		first := stream[0]
		if first.Type != "ContactCreated" || first.SchemaVersion != 1 || first.Position != 1 || first.ID == "" {
			t.Fatalf("first event = %+v", first)
		}
		if first.Metadata != meta {
			t.Fatalf("metadata = %+v, want %+v", first.Metadata, meta)
		}
		if time.Since(first.OccurredAt) > time.Minute || first.OccurredAt.Location() != time.UTC {
			t.Fatalf("occurredAt = %v", first.OccurredAt)
		}
		ev, err := first.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.(domain.ContactCreated); got.Email != "A@x.io" {
			t.Fatalf("decoded = %+v", got)
		}
		s.Head(ctx) // waits for the horizon to pass this store's commits
		log, err := s.ReadLog(ctx, 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 2 || log[0].Position != 2 || log[1].StreamID != "tag_1" {
			t.Fatalf("log after 1 = %+v", log)
		}
		head, err := s.Head(ctx)
		if err != nil || head != 3 {
			t.Fatalf("head = %d, %v", head, err)
		}
		history, err := s.ReadContactHistory(ctx, "acc_test", "ct_a", 0, 10)
		if err != nil || len(history) != 2 {
			t.Fatalf("contact history = %d events, %v", len(history), err)
		}
		if other, _ := s.ReadContactHistory(ctx, "acc_other", "ct_a", 0, 10); len(other) != 0 {
			t.Fatalf("another account read %d events of the contact", len(other))
		}
		if owner, err := s.StreamAccount(ctx, "ct_a"); err != nil || owner != "acc_test" {
			t.Fatalf("account of ct_a = %q, %v", owner, err)
		}
		if owner, err := s.StreamAccount(ctx, "ct_nowhere"); err != nil || owner != "" {
			t.Fatalf("account of ct_nowhere = %q, %v", owner, err)
		}
	})
}

// Histories are read a page at a time, each page after the position of the previous page's last
// event, in position order, whatever else is appended between them.
func TestHistoriesAreReadAPageAtATime(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx := context.Background()
		var contact, subscription []int64 // the positions of ct_p's and wh_p's events
		for range 7 {
			pos, err := s.Append(ctx, meta,
				domain.StreamAppend{StreamID: "ct_p", ExpectedVersion: domain.AnyVersion, Events: tagged("ct_p", 1)},
				domain.StreamAppend{StreamID: "wh_p", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{domain.WebhookSubscriptionDisabled{SubscriptionID: "wh_p", Reason: "test"}}},
				domain.StreamAppend{StreamID: "ct_q", ExpectedVersion: domain.AnyVersion, Events: tagged("ct_q", 1)})
			if err != nil {
				t.Fatal(err)
			}
			contact, subscription = append(contact, pos-2), append(subscription, pos-1)
		}
		for name, c := range map[string]struct {
			read func(after int64, limit int) ([]domain.Recorded, error)
			want []int64
		}{
			"contact": {func(after int64, limit int) ([]domain.Recorded, error) {
				return s.ReadContactHistory(ctx, meta.AccountID, "ct_p", after, limit)
			}, contact},
			"subscription": {func(after int64, limit int) ([]domain.Recorded, error) {
				return s.ReadSubscriptionHistory(ctx, meta.AccountID, "wh_p", after, limit)
			}, subscription},
		} {
			var got []int64
			for after := int64(0); ; {
				page, err := c.read(after, 3)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range page {
					got = append(got, e.Position)
				}
				if len(page) < 3 {
					break
				}
				after = page[len(page)-1].Position
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s history read by pages: %v, want %v", name, got, c.want)
			}
			// A position of another entity's event starts the page right after it too.
			if page, err := c.read(c.want[2]+1, 10); err != nil || len(page) != 4 || page[0].Position != c.want[3] {
				t.Errorf("%s history after %d = %d events, %v", name, c.want[2]+1, len(page), err)
			}
		}
	})
}

func TestStaleExpectedVersionWritesNothing(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx := context.Background()
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_a", ExpectedVersion: 0, Events: tagged("ct_a", 2)}); err != nil {
			t.Fatal(err)
		}
		// Stale on the second stream: the first stream of the same append must not be written either.
		_, err := s.Append(ctx, meta,
			domain.StreamAppend{StreamID: "ct_b", ExpectedVersion: 0, Events: tagged("ct_b", 1)},
			domain.StreamAppend{StreamID: "ct_a", ExpectedVersion: 1, Events: tagged("ct_a", 1)},
		)
		if !errors.Is(err, domain.ErrWrongVersion) {
			t.Fatalf("stale append err = %v, want ErrWrongVersion", err)
		}
		// A new stream expected to exist is stale too.
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_c", ExpectedVersion: 3, Events: tagged("ct_c", 1)}); !errors.Is(err, domain.ErrWrongVersion) {
			t.Fatalf("append to missing stream at version 3: %v", err)
		}
		if b, _ := s.ReadStream(ctx, "ct_b"); len(b) != 0 {
			t.Fatalf("ct_b has %d events after a rejected append", len(b))
		}
		if head, _ := s.Head(ctx); head != 2 {
			t.Fatalf("head = %d after rejected appends, want 2", head)
		}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_a", ExpectedVersion: 2, Events: tagged("ct_a", 1)}); err != nil {
			t.Fatalf("append at the current version: %v", err)
		}
	})
}

func TestConcurrentAppendsToOneStreamExactlyOneWins(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx := context.Background()
		const writers = 40
		var wins, conflicts int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < writers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_race", ExpectedVersion: 0, Events: tagged("ct_race", 1)})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, domain.ErrWrongVersion):
					conflicts++
				default:
					t.Errorf("append: %v", err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 || conflicts != writers-1 {
			t.Fatalf("wins = %d, conflicts = %d; want exactly one winner", wins, conflicts)
		}
	})
}

// Invariant 4: while many transactions append at once, a reader following the log sees every
// committed event exactly once, in position order.
func TestConcurrentAppendersAndLiveReader(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		const appenders, perAppender = 32, 500 // 16,000 appends racing one reader: enough to interleave commits, quick enough for a loaded machine
		const total = appenders * perAppender

		type seen struct {
			ids       map[string]bool
			perStream map[string]int64
			last      int64
		}
		readerDone := make(chan error, 1)
		go func() {
			r := seen{ids: map[string]bool{}, perStream: map[string]int64{}}
			for len(r.ids) < total {
				batch, err := s.ReadLog(ctx, r.last, 1000)
				if err != nil {
					readerDone <- err
					return
				}
				if len(batch) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				for _, e := range batch {
					if e.Position != r.last+1 {
						readerDone <- fmt.Errorf("after position %d the reader got %d", r.last, e.Position)
						return
					}
					if r.ids[e.ID] {
						readerDone <- fmt.Errorf("event %s seen twice", e.ID)
						return
					}
					if e.Version != r.perStream[e.StreamID]+1 {
						readerDone <- fmt.Errorf("stream %s: version %d after %d", e.StreamID, e.Version, r.perStream[e.StreamID])
						return
					}
					r.ids[e.ID] = true
					r.perStream[e.StreamID] = e.Version
					r.last = e.Position
				}
			}
			readerDone <- nil
		}()

		var wg sync.WaitGroup
		errs := make(chan error, appenders)
		for a := 0; a < appenders; a++ {
			wg.Add(1)
			go func(a int) {
				defer wg.Done()
				stream := fmt.Sprintf("ct_%02d", a)
				for v := int64(0); v < perAppender; v++ {
					if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: stream, ExpectedVersion: v, Events: tagged(stream, 1)}); err != nil {
						errs <- fmt.Errorf("appender %d at version %d: %w", a, v, err)
						return
					}
				}
			}(a)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if err := <-readerDone; err != nil {
			t.Fatal(err)
		}
		if head, _ := s.Head(ctx); head != total {
			t.Fatalf("head = %d, want %d", head, total)
		}
	})
}

// A transaction that takes a position and rolls back (a writer that crashed mid-append) leaves
// no event behind, and the next append and every reader carry on past it. On PostgreSQL the
// next append does not wait for it, and readers see that append only once the doomed
// transaction has ended: until then it may still commit below it.
func TestRolledBackAppendLeavesNoTrace(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, db := newStore(t, dialect)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_a", ExpectedVersion: 0, Events: tagged("ct_a", 1)}); err != nil {
			t.Fatal(err)
		}
		s.Head(ctx) // waits for the horizon to pass the first append
		tx, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		doomed := eventstoretest.TakePosition(t, tx, dialect)
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
			VALUES ($1, 'doomed', 'ct_doomed', 1, 'TagApplied', 1, 0, 'acc_test', '{}', '{}')`, doomed); err != nil {
			t.Fatal(err)
		}

		appended := make(chan int64, 1)
		go func() {
			pos, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_b", ExpectedVersion: 0, Events: tagged("ct_b", 1)})
			if err != nil {
				t.Errorf("append beside the doomed transaction: %v", err)
			}
			appended <- pos
		}()
		want := int64(3) // the doomed transaction's position stays a gap
		if dialect == sqldb.Postgres {
			if pos := <-appended; pos != want {
				t.Fatalf("append beside the open transaction got position %d, want %d", pos, want)
			}
			if log, err := s.ReadLog(ctx, 0, 10); err != nil || len(log) != 1 {
				t.Fatalf("while a transaction below it is open, the log reads %+v (%v), want position 1 only", log, err)
			}
			if head, err := s.Head(ctx); err != nil || head != 1 {
				t.Fatalf("head while a transaction below it is open = %d (%v), want 1", head, err)
			}
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if dialect == sqldb.SQLite {
			// The one writer: the append waited, and the position came back with the rollback.
			want = 2
			if pos := <-appended; pos != want {
				t.Fatalf("append after rollback got position %d, want %d", pos, want)
			}
		}
		s.Head(ctx) // waits for the horizon to pass this store's commits
		// Read on as a reader does: a read from memory ends before another process's position.
		var log []domain.Recorded
		for after := int64(0); ; {
			page, err := s.ReadLog(ctx, after, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			log = append(log, page...)
			after = page[len(page)-1].Position
		}
		if len(log) != 2 || log[1].StreamID != "ct_b" || log[1].Position != want {
			t.Fatalf("log = %+v", log)
		}
		for _, e := range log {
			if e.ID == "doomed" {
				t.Fatal("the rolled-back event is visible")
			}
		}
	})
}

func TestAppendAfterCloseFails(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	s := eventstore.New(db)
	s.Close()
	_, err := s.Append(context.Background(), meta, domain.StreamAppend{StreamID: "ct_a", Events: tagged("ct_a", 1)})
	if !errors.Is(err, eventstore.ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

func newStoreB(b *testing.B, dialect sqldb.Dialect) (*eventstore.Store, *sqldb.DB) {
	b.Helper()
	db := sqldbtest.Open(b, dialect)
	s := eventstore.New(db)
	b.Cleanup(s.Close)
	return s, db
}

// A stream given with no events is a condition of the append: it must still be at its
// expected version, and it receives nothing.
func TestAppendChecksStreamsItDoesNotWrite(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx := context.Background()
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_read", Events: tagged("ct_read", 2)}); err != nil {
			t.Fatal(err)
		}
		_, err := s.Append(ctx, meta,
			domain.StreamAppend{StreamID: "ct_write", Events: tagged("ct_write", 1)},
			domain.StreamAppend{StreamID: "ct_read", ExpectedVersion: 1}) // stale: it is at 2
		if !errors.Is(err, domain.ErrWrongVersion) {
			t.Fatalf("append with a stale read: %v", err)
		}
		if written, _ := s.ReadStream(ctx, "ct_write"); len(written) != 0 {
			t.Fatal("an append whose read was stale wrote its events")
		}
		pos, err := s.Append(ctx, meta,
			domain.StreamAppend{StreamID: "ct_write", Events: tagged("ct_write", 1)},
			domain.StreamAppend{StreamID: "ct_read", ExpectedVersion: 2})
		if written, _ := s.ReadStream(ctx, "ct_write"); err != nil || len(written) != 1 || written[0].Position != pos {
			t.Fatalf("append with a current read: %d, %v", pos, err)
		}
		if read, _ := s.ReadStream(ctx, "ct_read"); len(read) != 2 {
			t.Fatalf("the checked stream received events: %d", len(read))
		}
		if pos, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_read", ExpectedVersion: 0}); pos != 0 || err != nil {
			t.Fatalf("an append with nothing to write: %d, %v", pos, err)
		}
	})
}

// ReadStreamFrom returns the events after a version, in version order, and nothing past the end;
// from 0 it is the whole stream, as ReadStream.
func TestReadStreamFromReturnsTheTail(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx := context.Background()
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_a", Events: tagged("ct_a", 5)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_b", Events: tagged("ct_b", 2)}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			after    int64
			versions []int64
		}{{0, []int64{1, 2, 3, 4, 5}}, {3, []int64{4, 5}}, {5, nil}, {9, nil}} {
			tail, err := s.ReadStreamFrom(ctx, "ct_a", c.after)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range tail {
				if r.StreamID != "ct_a" {
					t.Fatalf("after %d: an event of %s", c.after, r.StreamID)
				}
				got = append(got, r.Version)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.versions) {
				t.Errorf("after %d: versions %v, want %v", c.after, got, c.versions)
			}
		}
	})
}

// A contact's own events are found by their stream and get no entry in events_by_contact; the
// events of other streams that name it do. Its history lists both, in log order, each once, also
// an own event written before migration 12, which carries the contact id too.
func TestContactHistoryReadsTheOwnStreamWithoutContactIndexEntries(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, db := newStore(t, dialect)
		ctx := context.Background()
		tx, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		old := eventstoretest.TakePosition(t, tx, dialect)
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, data, metadata)
			VALUES ($1, 'old', 'ct_h', 1, 'TagApplied', 1, 0, 'acc_test', 'ct_h', '{"contactId":"ct_h","tagId":"tag_0","tagName":"t"}', '{"accountId":"acc_test"}')`, old); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, meta,
			domain.StreamAppend{StreamID: "ct_h", ExpectedVersion: 1, Events: tagged("ct_h", 2)},
			domain.StreamAppend{StreamID: "ld_h", ExpectedVersion: 0, Events: []domain.Event{domain.LeadCreated{LeadID: "ld_h", ContactID: "ct_h", AccountID: meta.AccountID}}}); err != nil {
			t.Fatal(err)
		}
		var indexed int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM events WHERE contact_id IS NOT NULL AND event_id <> 'old'`).Scan(&indexed); err != nil {
			t.Fatal(err)
		}
		if indexed != 1 {
			t.Fatalf("%d appended events carry a contact id, want the lead's only", indexed)
		}
		history, err := s.ReadContactHistory(ctx, meta.AccountID, "ct_h", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range history {
			got = append(got, e.StreamID+":"+e.Type)
		}
		if want := "[ct_h:TagApplied ct_h:TagApplied ct_h:TagApplied ld_h:LeadCreated]"; fmt.Sprint(got) != want {
			t.Fatalf("history = %v, want %s", got, want)
		}
	})
}
