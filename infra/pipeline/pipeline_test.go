package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

type nopObserver struct{}

func (nopObserver) Applied(string, int64, time.Time) {}
func (nopObserver) Relayed(int64)                    {}

var meta = domain.Metadata{AccountID: "acc_1", Actor: "operator"}

// appendContacts appends n contacts, each created and tagged twice.
func appendContacts(t *testing.T, s *eventstore.Store, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := appendContact(s, i); err != nil {
			t.Fatal(err)
		}
	}
	// Until the horizon passes them, readers of the log do not see them (ReadLog); Head waits.
	if _, err := s.Head(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// appendContact appends contact number i: created, then tagged twice (three events).
func appendContact(s *eventstore.Store, i int) error {
	id := fmt.Sprintf("ct_%04d", i)
	_, err := s.Append(context.Background(), meta, domain.StreamAppend{StreamID: id, Events: []domain.Event{
		domain.ContactCreated{ContactID: id, AccountID: "acc_1", Email: id + "@example.com", CustomFields: map[string]string{}},
		domain.TagApplied{ContactID: id, TagID: "tag_a"},
		domain.TagApplied{ContactID: id, TagID: "tag_b"},
	}})
	return err
}

// dump returns every contact row, as a reader of the read model sees it.
func dump(t *testing.T, db *sqldb.DB) string {
	t.Helper()
	rows, err := db.Read.Query(`SELECT id, email, tag_ids, updated_at FROM contacts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := ""
	for rows.Next() {
		var id, email, tags string
		var updated int64
		if err := rows.Scan(&id, &email, &tags, &updated); err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf("%s %s %s %d\n", id, email, tags, updated)
	}
	return out
}

func checkpoint(t *testing.T, db *sqldb.DB, name string) int64 {
	t.Helper()
	var pos int64
	if err := db.Read.QueryRow(`SELECT position FROM projection_checkpoints WHERE name = $1`, name).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

type running struct {
	p    *Pipeline
	stop func()
}

func start(t *testing.T, db *sqldb.DB, s *eventstore.Store) running {
	t.Helper()
	return startWith(t, db, s, projections.NewContacts(db.Read))
}

// startWith runs a pipeline of these projections until it is ready.
func startWith(t *testing.T, db *sqldb.DB, s *eventstore.Store, prs ...Projection) running {
	t.Helper()
	p := New(db, s, zap.NewNop(), nopObserver{})
	for _, pr := range prs {
		p.AddReadModel(pr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-p.Ready():
	case err := <-done:
		t.Fatalf("pipeline stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("pipeline not ready")
	}
	r := running{p: p, stop: func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pipeline: %v", err)
		}
	}}
	t.Cleanup(func() { cancel() })
	return r
}

// A projection catches up from the log at start (more than one relay batch), and again after a
// restart, applying each event once.
func TestProjectionCatchesUpFromTheLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		appendContacts(t, s, 0, 400) // 1,200 events: three relay batches
		r := start(t, db, s)
		if got := checkpoint(t, db, "contacts"); got != 1200 {
			t.Fatalf("checkpoint after catch-up = %d", got)
		}
		appendContacts(t, s, 400, 10)
		if err := r.p.Tracker().WaitReadModels(context.Background(), 1230); err != nil {
			t.Fatal(err)
		}
		r.stop()
		before := dump(t, db)

		appendContacts(t, s, 410, 5) // written while no pipeline runs
		start(t, db, s).stop()
		after := dump(t, db)
		if checkpoint(t, db, "contacts") != 1245 {
			t.Fatalf("checkpoint after restart = %d", checkpoint(t, db, "contacts"))
		}
		if after[:len(before)] != before {
			t.Fatal("a restart changed rows it had already applied")
		}
		var n int
		db.Read.QueryRow(`SELECT COUNT(*) FROM contacts WHERE tag_ids = '["tag_a","tag_b"]'`).Scan(&n)
		if n != 415 {
			t.Fatalf("%d of 415 contacts have exactly their two tags", n)
		}
	})
}

// Watermill may deliver a batch again (a retry, a second process): the projection skips what
// its checkpoint says it applied, so nothing changes twice.
func TestRedeliveredBatchChangesNothing(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		r := start(t, db, s)
		appendContacts(t, s, 0, 3)
		if err := r.p.Tracker().WaitReadModels(context.Background(), 9); err != nil {
			t.Fatal(err)
		}
		before := dump(t, db)
		batch, err := s.ReadLog(context.Background(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(logRange{After: 0, Through: batch[len(batch)-1].Position})
		for i := 0; i < 2; i++ {
			// Published through the pipeline's own Watermill pub/sub: delivered to the handler
			// like any relayed batch, read from the log (no batch of the relay has its id), and
			// acknowledged only once it was handled.
			if err := r.p.pubsub.Publish(topicOf(r.p.projectors[0]), message.NewMessage(watermill.NewUUID(), payload)); err != nil {
				t.Fatal(err)
			}
		}
		if after := dump(t, db); after != before {
			t.Fatalf("redelivery changed the read model:\nbefore\n%s\nafter\n%s", before, after)
		}
		if got := checkpoint(t, db, "contacts"); got != 9 {
			t.Fatalf("checkpoint = %d", got)
		}
		r.stop()
	})
}

// A batch that starts past the checkpoint (the transport lost a message) makes the projector
// read the missing events from the log first: nothing is skipped.
func TestProjectorFillsGapsFromTheLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		appendContacts(t, s, 0, 5) // positions 1..15
		all, err := s.ReadLog(context.Background(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		pr := &projector{projection: projections.NewContacts(db.Read), db: db, log: s, tracker: newTracker(), observer: nopObserver{}}
		if _, err := pr.checkpoint(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := pr.apply(context.Background(), 12, all[12:]); err != nil { // positions 13..15 only
			t.Fatal(err)
		}
		if got := checkpoint(t, db, "contacts"); got != 15 {
			t.Fatalf("checkpoint = %d", got)
		}
		var n int
		db.Read.QueryRow(`SELECT COUNT(*) FROM contacts WHERE tag_ids = '["tag_a","tag_b"]'`).Scan(&n)
		if n != 5 {
			t.Fatalf("%d of 5 contacts complete after a gap", n)
		}
	})
}

func newContactsPipeline(db *sqldb.DB, s *eventstore.Store) *Pipeline {
	p := New(db, s, zap.NewNop(), nopObserver{})
	p.AddReadModel(projections.NewContacts(db.Read))
	return p
}

// readModelChecker is a cache invalidator that checks, for every batch it is handed, that the
// contacts read model already holds the batch's contacts: a cache dropped before the read model
// committed could be filled again from the rows as they were.
type readModelChecker struct {
	db      *sqldb.DB
	batches int
	early   []string
}

func (*readModelChecker) Name() string { return "checker" }

func (c *readModelChecker) Invalidate(batch []domain.Recorded) {
	c.batches++
	for _, e := range batch {
		if e.Type != (domain.ContactCreated{}).EventType() {
			continue
		}
		var n int
		if err := c.db.Read.QueryRow(`SELECT count(*) FROM contacts WHERE id = $1`, e.StreamID).Scan(&n); err != nil || n != 1 {
			c.early = append(c.early, fmt.Sprintf("%s (%d rows, %v)", e.StreamID, n, err))
		}
	}
}

// Cache invalidators see a batch only once every read model has committed it.
func TestInvalidatorsRunAfterTheReadModelsCommitted(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		t.Cleanup(s.Close)
		checker := &readModelChecker{db: db}
		p := New(db, s, zap.NewNop(), nopObserver{})
		p.AddReadModel(projections.NewContacts(db.Read))
		p.AddInvalidator(checker)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		<-p.Ready()
		for i := range 30 {
			if err := appendContact(s, i); err != nil {
				t.Fatal(err)
			}
			head, err := s.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Tracker().WaitReadModels(ctx, head); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if checker.batches == 0 || len(checker.early) > 0 {
			t.Fatalf("%d batches; invalidated before the read model had them: %v", checker.batches, checker.early)
		}
	})
}

// A message carries only the range of the log it stands for: a handler of another process (or a
// redelivery) reads exactly that range from the log, however many reads it takes.
func TestMessageFromElsewhereIsReadFromTheLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		appendContacts(t, s, 0, 200) // positions 1..600
		p := newContactsPipeline(db, s)
		payload, _ := json.Marshal(logRange{After: 40, Through: 590})
		batch, _, err := p.batchOf(context.Background(), message.NewMessage(watermill.NewUUID(), payload))
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) != 550 || batch[0].Position != 41 || batch[len(batch)-1].Position != 590 {
			t.Fatalf("read %d events, %d..%d; want 550, 41..590", len(batch), batch[0].Position, batch[len(batch)-1].Position)
		}
		for i, e := range batch {
			if e.Position != int64(41+i) {
				t.Fatalf("event %d at position %d", i, e.Position)
			}
		}
	})
}
