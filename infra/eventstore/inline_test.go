package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// The inline projections (inline.go): applied in the append's transaction, whoever appends,
// whatever runs beside.

func newContact(id string) domain.StreamAppend {
	return domain.StreamAppend{StreamID: id, ExpectedVersion: 0, Events: []domain.Event{
		domain.ContactCreated{ContactID: id, AccountID: meta.AccountID, Email: id + "@x.io", CustomFields: map[string]string{}},
		domain.TagApplied{ContactID: id, TagID: "tag_1", TagName: "VIP"},
	}}
}

func checkpointOf(t *testing.T, db *sqldb.DB, name string) int64 {
	t.Helper()
	var pos int64
	if err := db.Read.QueryRow(`SELECT position FROM projection_checkpoints WHERE name = $1`, name).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

// checkContacts checks that the read model holds exactly n contacts, each with its tag, and that
// its checkpoint says appends apply it.
func checkContacts(t *testing.T, s *eventstore.Store, db *sqldb.DB, contacts *projections.Contacts, n int) {
	t.Helper()
	ctx := context.Background()
	var count int
	if err := db.Read.QueryRow(`SELECT COUNT(*) FROM contacts`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("%d contacts in the read model, want %d", count, n)
	}
	for i := range n {
		c, err := contacts.Get(ctx, meta.AccountID, fmt.Sprintf("ct_%d", i))
		if err != nil {
			t.Fatalf("contact %d: %v", i, err)
		}
		if len(c.TagIDs) != 1 {
			t.Fatalf("contact %d has tags %v", i, c.TagIDs)
		}
	}
	var head int64 // the end of the log, whatever the readers' horizon
	if err := db.Read.QueryRow(`SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	var inline int
	if err := db.Read.QueryRow(`SELECT inline FROM projection_checkpoints WHERE name = $1`, contacts.Name()).Scan(&inline); err != nil {
		t.Fatal(err)
	}
	if got := checkpointOf(t, db, contacts.Name()); inline != 1 || got > head {
		t.Fatalf("checkpoint %d (inline %d), head %d", got, inline, head)
	}
}

func TestInlineProjectionIsAppliedByTheAppend(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, db := newStore(t, dialect)
		contacts := projections.NewContacts(db.Read)
		s.SetInline(contacts)
		ctx := context.Background()
		if _, err := s.Append(ctx, meta, newContact("ct_0")); err != nil {
			t.Fatal(err)
		}
		// No relay runs: the answered append alone made the read model show it.
		checkContacts(t, s, db, contacts, 1)
		// A change of a row the batch did not create reads it inside the transaction first.
		name := "Ada"
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_0", ExpectedVersion: 2, Events: []domain.Event{
			domain.ContactUpdated{ContactID: "ct_0", FirstName: &name}}}); err != nil {
			t.Fatal(err)
		}
		c, err := contacts.Get(ctx, meta.AccountID, "ct_0")
		if err != nil || c.FirstName != "Ada" || len(c.TagIDs) != 1 {
			t.Fatalf("contact = %+v, %v", c, err)
		}
	})
}

// A write's answer is built from what its append committed (projections.Contacts.ContactAt), not
// read back: the contact is kept as the append left it, and only for the position it was kept at.
func TestInlineContactsKeepWhatTheAppendCommitted(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, db := newStore(t, dialect)
		contacts := projections.NewContacts(db.Read)
		s.SetInline(contacts)
		ctx := context.Background()
		pos, err := s.Append(ctx, meta, newContact("ct_0"))
		if err != nil {
			t.Fatal(err)
		}
		// Take the row away behind the store's back: what ContactAt answers then was kept.
		if _, err := db.Write.Exec(`DELETE FROM contacts`); err != nil {
			t.Fatal(err)
		}
		c, err := contacts.GetAt(ctx, meta.AccountID, "ct_0", pos)
		if err != nil || c.Email != "ct_0@x.io" || len(c.TagIDs) != 1 || c.TagIDs[0] != "tag_1" || c.CustomFields == nil {
			t.Fatalf("GetAt(the append's position) = %+v, %v; want the contact the append wrote", c, err)
		}
		// A position past what was kept (another process wrote the contact since) is read.
		if _, err := contacts.GetAt(ctx, meta.AccountID, "ct_0", pos+1); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("GetAt(a later position) = %v; want it read, and not found", err)
		}
		// Changing the copy GetAt gave changes nothing kept.
		c.TagIDs[0] = "changed"
		if again, _ := contacts.GetAt(ctx, meta.AccountID, "ct_0", pos); again.TagIDs[0] != "tag_1" {
			t.Fatalf("a caller's change reached the kept contact: %v", again.TagIDs)
		}
	})
}

// failing is an inline projection whose statements fail.
type failing struct{}

func (failing) Name() string          { return "failing" }
func (failing) Handles(t string) bool { return t == "TagApplied" }
func (failing) ApplyIn(ctx context.Context, tx sqldb.Applier, _ []domain.Recorded) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO no_such_table VALUES (1)`)
	return err
}

// The new failure mode: a projection that fails takes its append with it. Nothing is written,
// neither the events nor the other projections' rows, and the store goes on.
func TestInlineProjectionFailureWritesNothing(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, db := newStore(t, dialect)
		contacts := projections.NewContacts(db.Read)
		s.SetInline(contacts, failing{})
		ctx := context.Background()
		if _, err := s.Append(ctx, meta, newContact("ct_0")); err == nil {
			t.Fatal("an append whose inline projection failed succeeded")
		}
		head, err := s.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var rows int
		if err := db.Read.QueryRow(`SELECT (SELECT COUNT(*) FROM events) + (SELECT COUNT(*) FROM contacts)`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if head != 0 || rows != 0 {
			t.Fatalf("head %d and %d rows after a failed append", head, rows)
		}
		// Nor does the contacts projection keep what the rolled-back append would have written.
		if c, err := contacts.GetAt(ctx, meta.AccountID, "ct_0", 0); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("after a failed append, ContactAt = %+v, %v; want not found", c, err)
		}
		// An append the failing projection has nothing to do with goes through.
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_0", Events: []domain.Event{
			domain.ContactCreated{ContactID: "ct_0", AccountID: meta.AccountID, Email: "a@x.io", CustomFields: map[string]string{}}}}); err != nil {
			t.Fatal(err)
		}
	})
}

// A process that appended without the inline projections (a binary from before they were inline,
// a tool) leaves their checkpoints behind: CatchUpInline, or the next append with them, applies
// the missed stretch first, inside its own transaction, so nothing is skipped. From then on
// appends apply them, and a store without them may not append.
func TestInlineProjectionCatchesUpWithAppendsMadeWithoutIt(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		ctx := context.Background()
		without := eventstore.New(db)
		defer without.Close()
		for i := range 3 {
			if _, err := without.Append(ctx, meta, newContact(fmt.Sprintf("ct_%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		with := eventstore.New(db)
		defer with.Close()
		contacts := projections.NewContacts(db.Read)
		with.SetInline(contacts)
		if err := with.CatchUpInline(ctx); err != nil {
			t.Fatal(err)
		}
		checkContacts(t, with, db, contacts, 3)
		if _, err := with.Append(ctx, meta, newContact("ct_3")); err != nil {
			t.Fatal(err)
		}
		checkContacts(t, with, db, contacts, 4)
		late := eventstore.New(db)
		defer late.Close()
		if _, err := late.Append(ctx, meta, newContact("ct_4")); err == nil {
			t.Fatal("a store without the inline projections appended after they were flagged inline")
		}
		checkContacts(t, with, db, contacts, 4)
	})
}

// Two stores (two processes' appenders) append at once while the contacts read model is rebuilt
// and swapped in: every contact ends up in the read model exactly once, with its tag, and the
// checkpoint at the head.
func TestInlineProjectionUnderConcurrentAppendsAndRebuild(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		ctx := context.Background()
		contacts := projections.NewContacts(db.Read)
		var stores []*eventstore.Store
		for range 2 {
			s := eventstore.New(db)
			s.SetInline(contacts)
			defer s.Close()
			stores = append(stores, s)
		}
		const writers, each = 8, 25
		for i := range 50 { // something to rebuild from
			if _, err := stores[0].Append(ctx, meta, newContact(fmt.Sprintf("ct_%d", writers*each+i))); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, writers+1)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					if _, err := stores[w%2].Append(ctx, meta, newContact(fmt.Sprintf("ct_%d", w*each+i))); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := pipeline.Rebuild(ctx, db, stores[0], contacts, nil); err != nil {
				errs <- fmt.Errorf("rebuild: %w", err)
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			if !errors.Is(err, nil) {
				t.Fatal(err)
			}
		}
		checkContacts(t, stores[0], db, contacts, writers*each+50)
	})
}
