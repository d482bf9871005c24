package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
	_ "github.com/funnelhq/funnel/infra/sqldb" // registers the sqlite driver
)

// seen is a batch state that records what its handlers were given.
type seen struct {
	events   []string
	flushed  int
	failAt   int64 // a handler fails on the event at this position
	flushErr error
}

func (s *seen) tagApplied(r domain.Recorded, e domain.TagApplied) error {
	if r.Position == s.failAt {
		return errors.New("boom")
	}
	s.events = append(s.events, "applied "+e.ContactID+" "+e.TagID)
	return nil
}

func (s *seen) tagRemoved(r domain.Recorded, e domain.TagRemoved) error {
	s.events = append(s.events, "removed "+e.ContactID+" "+e.TagID)
	return nil
}

func (s *seen) flush() error {
	s.flushed++
	return s.flushErr
}

func recorded(t *testing.T, pos int64, e domain.Event) domain.Recorded {
	t.Helper()
	typ, version, data, err := domain.EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	return domain.Recorded{Position: pos, Type: typ, SchemaVersion: version, Data: data}
}

func testReadModel(t *testing.T, state *seen) readModel[*seen] {
	t.Helper()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return folded(db, "test", []string{"test_rows"}, func(writer) *seen { return state },
		on((*seen).tagApplied),
		on((*seen).tagRemoved),
	)
}

// A declared projection applies the events of the types it has handlers for, typed and in order,
// skips the others without decoding them, and flushes once at the end of the batch.
func TestReadModelDispatchesTypedEvents(t *testing.T) {
	state := &seen{}
	m := testReadModel(t, state)
	if m.Name() != "test" || strings.Join(m.Tables(), ",") != "test_rows" {
		t.Fatalf("name %q, tables %v", m.Name(), m.Tables())
	}
	for typ, want := range map[string]bool{"TagApplied": true, "TagRemoved": true, "ContactCreated": false, "Nope": false} {
		if got := m.Handles(typ); got != want {
			t.Errorf("Handles(%s) = %v", typ, got)
		}
	}
	unhandled := domain.Recorded{Position: 2, Type: "ContactCreated", SchemaVersion: 1, Data: json.RawMessage(`not json`)}
	batch := []domain.Recorded{
		recorded(t, 1, domain.TagApplied{ContactID: "ct_1", TagID: "tag_a"}),
		unhandled,
		recorded(t, 3, domain.TagRemoved{ContactID: "ct_1", TagID: "tag_a"}),
		recorded(t, 4, domain.TagApplied{ContactID: "ct_2", TagID: "tag_b"}),
	}
	if err := m.Apply(context.Background(), nil, batch); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(state.events, "; "); got != "applied ct_1 tag_a; removed ct_1 tag_a; applied ct_2 tag_b" {
		t.Fatalf("handlers saw %q", got)
	}
	if state.flushed != 1 {
		t.Fatalf("flushed %d times", state.flushed)
	}
}

// A failing handler, an event that does not decode and a failing flush each stop the batch with
// an error that names the projection, and the event's type and position.
func TestReadModelErrorsNameTheProjectionAndTheEvent(t *testing.T) {
	ctx := context.Background()
	state := &seen{failAt: 2}
	m := testReadModel(t, state)
	batch := []domain.Recorded{
		recorded(t, 1, domain.TagApplied{ContactID: "ct_1", TagID: "tag_a"}),
		recorded(t, 2, domain.TagApplied{ContactID: "ct_1", TagID: "tag_b"}),
	}
	if err := m.Apply(ctx, nil, batch); err == nil || err.Error() != "projections: test: TagApplied at 2: boom" || state.flushed != 0 {
		t.Fatalf("failing handler: %v (flushed %d times)", err, state.flushed)
	}

	broken := domain.Recorded{Position: 5, Type: "TagRemoved", SchemaVersion: 1, Data: json.RawMessage(`{"contactId": 7}`)}
	if err := m.Apply(ctx, nil, []domain.Recorded{broken}); err == nil || !strings.HasPrefix(err.Error(), "projections: test: TagRemoved at 5: domain: decode TagRemoved") {
		t.Fatalf("undecodable event: %v", err)
	}

	*state = seen{flushErr: errors.New("disk full")}
	if err := m.Apply(ctx, nil, batch); err == nil || err.Error() != "projections: test: disk full" {
		t.Fatalf("failing flush: %v", err)
	}
}

// Two handlers of one event type are a mistake of the declaration, refused when it is made.
func TestReadModelRefusesTwoHandlersOfOneType(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "two handlers of TagApplied") {
			t.Fatalf("recovered %v", r)
		}
	}()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	folded(db, "test", nil, func(writer) *seen { return &seen{} }, on((*seen).tagApplied), on((*seen).tagApplied))
}
