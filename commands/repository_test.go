package commands

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// failingAppends is the event store with appends that fail while fail is set (a lost
// connection, a full disk), after the decision was made.
type failingAppends struct {
	EventStore
	fail bool
}

func (s *failingAppends) Append(ctx context.Context, meta domain.Metadata, appends ...domain.StreamAppend) (int64, error) {
	if s.fail {
		return 0, errors.New("connection reset by peer")
	}
	return s.EventStore.Append(ctx, meta, appends...)
}

// A decision that changed its contact and then failed, and one whose append failed, leave no
// trace in the states the repository keeps: the next command sees the contact as the log has
// it, and its own change is recorded (a kept state holding the failed change would make it think
// the tag was already there, and the tag would be lost).
func TestFailedCommandsLeaveTheKeptStateAsTheLogHasIt(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		es := eventstore.New(sqldbtest.Open(t, dialect))
		t.Cleanup(es.Close)
		store := &failingAppends{EventStore: es}
		repo := NewRepository(store, 0)
		ctx := context.Background()
		meta := Meta{AccountID: "acc_1", Actor: domain.OperatorActor}
		id := domain.ContactIDFor("acc_1", "ann@example.com")
		write := func(decide func(c *domain.Contact) error) error {
			_, err := execute(ctx, repo, meta, id, func(ctx context.Context, s *session) error {
				c := domain.ContactStream(id)
				if err := s.load(ctx, c); err != nil {
					return err
				}
				return decide(c)
			})
			return err
		}
		tag := func(id string) []domain.TagRef { return []domain.TagRef{{ID: id, Name: id}} }
		if err := write(func(c *domain.Contact) error {
			_, err := c.Upsert("acc_1", "ann@example.com", domain.ContactProfile{})
			return err
		}); err != nil {
			t.Fatal(err)
		}

		refused := domain.Invalid("refused after tagging")
		if err := write(func(c *domain.Contact) error { c.AddTags(tag("tag_1")); return refused }); !errors.Is(err, refused) {
			t.Fatalf("failing decision: %v", err)
		}
		store.fail = true
		if err := write(func(c *domain.Contact) error { c.AddTags(tag("tag_2")); return nil }); err == nil || !strings.Contains(err.Error(), "connection reset") {
			t.Fatalf("failing append: %v", err)
		}
		store.fail = false

		if err := write(func(c *domain.Contact) error {
			if c.HasTag("tag_1") || c.HasTag("tag_2") {
				t.Errorf("the next command sees a change that was never appended: tag_1 %v, tag_2 %v", c.HasTag("tag_1"), c.HasTag("tag_2"))
			}
			c.AddTags(append(tag("tag_1"), tag("tag_2")...))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		recs, err := es.ReadStream(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, r := range recs {
			types = append(types, r.Type)
		}
		if got := strings.Join(types, " "); got != "ContactCreated TagApplied TagApplied" {
			t.Fatalf("stream = %s", got)
		}
	})
}

// The cache holds at most its bound in bytes, what each state costs besides its bytes included,
// least recently used out first; a state too large for it is not kept; and an older state never
// replaces a newer one.
func TestStateCacheBounds(t *testing.T) {
	contact := func(id, firstName string) *domain.Contact {
		c := domain.ContactStream(id)
		c.Replay(domain.ContactCreated{ContactID: id, AccountID: "acc_1", Email: id + "@example.com", FirstName: firstName})
		return c
	}
	size := func(c *domain.Contact) int { // what keeping its state costs, bookkeeping included
		data, err := c.EncodeState()
		if err != nil {
			t.Fatal(err)
		}
		return costOf(c.StreamID(), data)
	}
	one := size(contact("ct_0", "Ann"))
	cache := newStateCache(4*one + one/2) // room for four states
	for _, id := range []string{"ct_0", "ct_1", "ct_2", "ct_3"} {
		cache.keep(contact(id, "Ann"), 1, 1)
	}
	if _, _, ok := cache.restore(domain.ContactStream("ct_0")); !ok { // ct_0 is now the most recently used
		t.Fatal("ct_0 was not kept")
	}
	cache.keep(contact("ct_4", "Ann"), 1, 1)
	if _, _, ok := cache.restore(domain.ContactStream("ct_1")); ok {
		t.Error("the least recently used state outlived the bound")
	}
	for _, id := range []string{"ct_0", "ct_2", "ct_3", "ct_4"} {
		if _, _, ok := cache.restore(domain.ContactStream(id)); !ok {
			t.Errorf("%s was evicted", id)
		}
	}
	if cache.bytes > cache.maxBytes || cache.bytes != 4*one {
		t.Errorf("cache holds %d bytes, bound %d, four states are %d", cache.bytes, cache.maxBytes, 4*one)
	}

	cache.keep(contact("ct_big", strings.Repeat("x", one*2)), 1, 1)
	if _, _, ok := cache.restore(domain.ContactStream("ct_big")); ok {
		t.Error("a state larger than a quarter of the bound was kept")
	}

	cache.keep(contact("ct_2", "Newer"), 5, 9)
	cache.keep(contact("ct_2", "Older"), 3, 7)
	c := domain.ContactStream("ct_2")
	version, position, ok := cache.restore(c)
	if !ok || version != 5 || position != 9 || c.Snapshot(nil).FirstName != "Newer" {
		t.Errorf("restored ct_2 at version %d, position %d, %q; want the newer state", version, position, c.Snapshot(nil).FirstName)
	}

	// A state kept for one aggregate type is not restored into another of the same stream id.
	if _, _, ok := cache.restore(domain.LeadStream("ct_2")); ok {
		t.Error("a contact's state was restored into a lead")
	}
}

// The cache's bound is the memory it takes, not only the bytes of its states: filled with many
// small states (each costs more in bookkeeping than in bytes), the heap grows by about the bound.
func TestStateCacheBoundIsItsMemory(t *testing.T) {
	const bound = 2 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cache := newStateCache(bound)
	for i := range 40_000 {
		id := fmt.Sprintf("ct_%026d", i)
		c := domain.ContactStream(id)
		c.Replay(domain.ContactCreated{ContactID: id, AccountID: "acc_1", Email: id + "@example.com"})
		cache.keep(c, 1, 1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > bound*5/4 {
		t.Errorf("a cache bounded at %d bytes grew the heap by %d", bound, grown)
	}
	if n := cache.entries.Len(); n < 1000 {
		t.Errorf("only %d states kept within %d bytes", n, bound)
	}
	runtime.KeepAlive(cache)
}
