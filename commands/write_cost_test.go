package commands_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// countingStore is the event store, counting the stream reads and the events they return.
type countingStore struct {
	commands.EventStore
	reads, events atomic.Int64
	mu            sync.Mutex
	byStream      map[string]int
}

func (s *countingStore) ReadStreamFrom(ctx context.Context, streamID string, after int64) ([]domain.Recorded, error) {
	recs, err := s.EventStore.ReadStreamFrom(ctx, streamID, after)
	s.reads.Add(1)
	s.events.Add(int64(len(recs)))
	s.mu.Lock()
	if s.byStream == nil {
		s.byStream = map[string]int{}
	}
	s.byStream[streamID]++
	s.mu.Unlock()
	return recs, err
}

// readsOf is how many reads of a stream were made since the last reset.
func (s *countingStore) readsOf(streamID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byStream[streamID]
}

func (s *countingStore) reset() {
	s.reads.Store(0)
	s.events.Store(0)
	s.mu.Lock()
	s.byStream = nil
	s.mu.Unlock()
}

// seedContact appends a contact with events events in all (its creation, then names set over
// and over) straight to the log, as years of use would have left it.
func seedContact(t testing.TB, store *eventstore.Store, accountID, email string, events int) string {
	t.Helper()
	id := domain.ContactIDFor(accountID, email)
	batch := []domain.Event{domain.ContactCreated{ContactID: id, AccountID: accountID, Email: email, CustomFields: map[string]string{}}}
	var version int64
	flush := func() {
		if _, err := store.Append(context.Background(), domain.Metadata{AccountID: accountID, Actor: "operator"},
			domain.StreamAppend{StreamID: id, ExpectedVersion: version, Events: batch}); err != nil {
			t.Fatal(err)
		}
		version += int64(len(batch))
		batch = nil
	}
	for i := 1; i < events; i++ {
		name := fmt.Sprintf("Name %d", i)
		batch = append(batch, domain.ContactUpdated{ContactID: id, FirstName: &name})
		if len(batch) == 1000 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	return id
}

// rename writes a contact through UpsertContact, which records one ContactUpdated.
func rename(t testing.TB, h commands.UpsertContactHandler, accountID, email, firstName string) {
	t.Helper()
	if _, err := h.Handle(context.Background(), commands.UpsertContact{
		Meta: commands.Meta{AccountID: accountID, Actor: domain.OperatorActor}, Email: email,
		Profile: domain.ContactProfile{FirstName: &firstName},
	}); err != nil {
		t.Fatal(err)
	}
}

// The 6,000th write to one contact reads what the 10th does: the events after the state this
// process kept, not the stream. Another process's write in between is read as that tail, one
// event; the first write after a (re)start reads the stream whole, once.
func TestAWriteReadsTheTailOfItsStreamOnly(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		store := eventstore.New(sqldbtest.Open(t, dialect))
		t.Cleanup(store.Close)
		counted := &countingStore{EventStore: store}
		this := commands.NewHandlers(commands.Dependencies{Store: counted, Log: zap.NewNop(), Observer: noObserver{}})
		other := commands.NewHandlers(commands.Dependencies{Store: store, Log: zap.NewNop(), Observer: noObserver{}}) // another process
		const account = "acc_1"
		type reads struct{ queries, events int64 }
		measured := map[int]reads{}
		for _, n := range []int{10, 6000} {
			email := fmt.Sprintf("writer-%d@example.com", n)
			id := seedContact(t, store, account, email, n-3)

			counted.reset()
			rename(t, this.UpsertContact, account, email, "Cold") // write n-2: this process never read the contact
			if got := counted.events.Load(); got != int64(n-3) {
				t.Fatalf("n=%d: the first write of a process read %d events, want the whole stream (%d)", n, got, n-3)
			}
			rename(t, other.UpsertContact, account, email, "Other") // write n-1, by the other process

			counted.reset()
			rename(t, this.UpsertContact, account, email, "Last") // write n
			measured[n] = reads{counted.reads.Load(), counted.events.Load()}

			recs, err := store.ReadStream(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			last, err := recs[len(recs)-1].Decode()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != n || *last.(domain.ContactUpdated).FirstName != "Last" {
				t.Fatalf("n=%d: the stream has %d events ending with %+v", n, len(recs), last)
			}
		}
		if measured[10] != measured[6000] || measured[6000] != (reads{queries: 1, events: 1}) {
			t.Fatalf("the 10th write read %+v, the 6,000th %+v; want one query returning the other process's event each", measured[10], measured[6000])
		}
	})
}

// blockingStore is the event store, holding every read of one stream until released.
type blockingStore struct {
	commands.EventStore
	stream  string
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) ReadStreamFrom(ctx context.Context, streamID string, after int64) ([]domain.Recorded, error) {
	if streamID == s.stream {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.EventStore.ReadStreamFrom(ctx, streamID, after)
}

// lockBucket is the stream lock two ids shared before locks were per stream: 256 mutexes
// chosen by a hash of the id.
func lockBucket(id string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32() % 256
}

// A command held up on a contact of one account does not hold up a command on a contact of
// another account, even one whose id falls in the same bucket of the former 256 shared locks.
func TestACommandOnOneStreamDoesNotWaitForAnother(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		store := eventstore.New(sqldbtest.Open(t, dialect))
		t.Cleanup(store.Close)
		// The busy contact exists (its stream written straight to the log), so its upsert's guess
		// that it is new fails and the next attempt reads the stream, where it is held.
		busy := seedContact(t, store, "acc_busy", "busy@example.com", 1)
		quiet := ""
		for i := 0; quiet == "" || lockBucket(domain.ContactIDFor("acc_quiet", quiet)) != lockBucket(busy); i++ {
			quiet = fmt.Sprintf("quiet-%d@example.com", i)
		}
		blocking := &blockingStore{EventStore: store, stream: busy, entered: make(chan struct{}), release: make(chan struct{})}
		var releaseOnce sync.Once
		release := func() { releaseOnce.Do(func() { close(blocking.release) }) }
		t.Cleanup(release) // a failing test lets the busy command go too
		h := commands.NewHandlers(commands.Dependencies{Store: blocking, Log: zap.NewNop(), Observer: noObserver{}})
		heldDone := make(chan error, 1)
		go func() {
			_, err := h.UpsertContact.Handle(context.Background(), commands.UpsertContact{Meta: commands.Meta{AccountID: "acc_busy", Actor: domain.OperatorActor}, Email: "busy@example.com"})
			heldDone <- err
		}()
		<-blocking.entered // the busy contact's command holds its stream's lock, stuck in its read

		quietDone := make(chan error, 1)
		go func() {
			_, err := h.UpsertContact.Handle(context.Background(), commands.UpsertContact{Meta: commands.Meta{AccountID: "acc_quiet", Actor: domain.OperatorActor}, Email: quiet})
			quietDone <- err
		}()
		select {
		case err := <-quietDone:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second): // a guard against a hang, not a measure of speed
			t.Fatal("the command on the quiet contact waited for the busy contact's command")
		}
		release()
		if err := <-heldDone; err != nil {
			t.Fatal(err)
		}
	})
}

// A form never changes once created, so a process reads its stream once: the submissions after
// the first use the state kept of it, without a read of the log. A process that never saw the
// form (another one, or this one restarted) reads it once too. A submission whose contact has no
// custom field value reads nothing of the account either (it is read for the fields' names), and
// a new email's contact is taken for new without a read.
func TestAFormIsReadOncePerProcess(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		store := eventstore.New(sqldbtest.Open(t, dialect))
		t.Cleanup(store.Close)
		setup := commands.NewHandlers(commands.Dependencies{Store: store, Log: zap.NewNop(), Observer: noObserver{}})
		operator := commands.Meta{Actor: domain.OperatorActor}
		account, err := setup.CreateAccount.Handle(ctx, commands.CreateAccount{Name: "Acme"})
		if err != nil {
			t.Fatal(err)
		}
		operator.AccountID = account.AccountID
		form, err := setup.CreateForm.Handle(ctx, commands.CreateForm{Meta: operator, Name: "Signup",
			Fields: []domain.FieldSpec{{Label: "Email", Type: "email", ContactField: domain.ContactFieldEmail, Required: true}}})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := store.ReadStream(ctx, form.FormID)
		if err != nil || len(recs) != 1 {
			t.Fatalf("the form's stream: %d events, %v", len(recs), err)
		}
		created, err := recs[0].Decode()
		if err != nil {
			t.Fatal(err)
		}
		fieldID := created.(domain.FormCreated).Fields[0].ID

		counted := &countingStore{EventStore: store}
		process := commands.NewHandlers(commands.Dependencies{Store: counted, Log: zap.NewNop(), Observer: noObserver{}})
		for i, want := range []int{1, 0, 0} {
			counted.reset()
			email := fmt.Sprintf("reader-%d@example.com", i)
			res, err := process.SubmitForm.Handle(ctx, commands.SubmitForm{Meta: operator, FormID: form.FormID, Values: map[string]any{fieldID: email}})
			if err != nil {
				t.Fatal(err)
			}
			if res.ContactID == "" {
				t.Fatalf("submission %d names no contact", i+1)
			}
			if got := counted.readsOf(form.FormID); got != want {
				t.Errorf("submission %d read the form's stream %d times, want %d", i+1, got, want)
			}
			if got := counted.readsOf(account.AccountID) + counted.readsOf(res.ContactID); got != 0 {
				t.Errorf("submission %d read the account's or the contact's stream %d times, want none", i+1, got)
			}
		}
	})
}

// appendCounting is the event store, counting the appends (failed ones included).
type appendCounting struct {
	*eventstore.Store
	appends atomic.Int64
}

func (s *appendCounting) Append(ctx context.Context, meta domain.Metadata, appends ...domain.StreamAppend) (int64, error) {
	s.appends.Add(1)
	return s.Store.Append(ctx, meta, appends...)
}

// The email of an erased contact, written again: the first write of a process takes the erased
// contact's id for new, fails an append on its version, and writes the contact that takes its
// place; the process remembers that the erased id exists, so its later writes of the email go to
// the new contact at once, without a failed append each.
func TestAnErasedContactIsTakenForNewOnce(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		store := eventstore.New(sqldbtest.Open(t, dialect))
		t.Cleanup(store.Close)
		_, server := sealingtest.NewKey(t)
		store.SealPersonalData(server)
		meta := commands.Meta{AccountID: "acc_1", Actor: domain.OperatorActor}
		const email = "again@example.com"
		setup := commands.NewHandlers(commands.Dependencies{Store: store, Log: zap.NewNop(), Observer: noObserver{}})
		erased, err := setup.UpsertContact.Handle(ctx, commands.UpsertContact{Meta: meta, Email: email})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := setup.EraseContact.Handle(ctx, commands.EraseContact{Meta: meta, ContactID: erased.ContactID}); err != nil {
			t.Fatal(err)
		}

		counted := &appendCounting{Store: store}
		process := commands.NewHandlers(commands.Dependencies{Store: counted, Log: zap.NewNop(), Observer: noObserver{}})
		var again string
		for i, want := range []int64{2, 1, 1} {
			counted.appends.Store(0)
			name := fmt.Sprintf("Name %d", i)
			res, err := process.UpsertContact.Handle(ctx, commands.UpsertContact{Meta: meta, Email: email, Profile: domain.ContactProfile{FirstName: &name}})
			if err != nil {
				t.Fatal(err)
			}
			if got := counted.appends.Load(); got != want {
				t.Errorf("write %d of the erased contact's email made %d appends, want %d", i+1, got, want)
			}
			switch {
			case res.ContactID == erased.ContactID:
				t.Fatalf("write %d went to the erased contact", i+1)
			case again == "":
				again = res.ContactID
			case res.ContactID != again:
				t.Fatalf("write %d went to %s, the first to %s", i+1, res.ContactID, again)
			}
		}
	})
}
