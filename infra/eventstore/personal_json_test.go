package eventstore

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
)

// sealedFixture is testdata/sealed_by_first_version.json: a contact's creation, a form
// submission and a purchase, each as it was encoded (Plain) and as the first version of sealing
// stored it (Stored, its values decoded into map[string]any and encoded again), with the
// person's key. Logs written by that version must keep opening.
type sealedFixture struct {
	Key    string
	Events []struct {
		ID, Type      string
		SchemaVersion int
		Plain, Stored json.RawMessage
	}
}

func readSealedFixture(t testing.TB) (sealedFixture, *sealing.Sealer) {
	t.Helper()
	b, err := os.ReadFile("testdata/sealed_by_first_version.json")
	if err != nil {
		t.Fatal(err)
	}
	var f sealedFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	parsed, err := sealing.ParseKey(f.Key)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sealing.New(parsed)
	if err != nil {
		t.Fatal(err)
	}
	return f, key
}

// sameJSON tells whether two JSON texts hold the same value, whatever their members' order.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// personalTexts are the fixture's personal values: none may be readable in a sealed form.
var personalTexts = []string{"fixture", "Zoë", "Quill", "+1555", "Marmalade", "12345678", "12.50"}

func TestDataSealedByTheFirstVersionOpensAsItWasWritten(t *testing.T) {
	f, key := readSealedFixture(t)
	for i, e := range f.Events {
		rec := domain.Recorded{ID: e.ID, Position: int64(i + 1), Type: e.Type, SchemaVersion: e.SchemaVersion, Data: e.Stored}
		opened, err := openData(rec, map[string]*sealing.Sealer{"ct_fx": key})
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		if !sameJSON(t, opened, e.Plain) {
			t.Errorf("%s opened as\n%s\nwant\n%s", e.Type, opened, e.Plain)
		}
		// Erased (no key): the same document, with null where the personal values were.
		erased, err := openData(rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		scrub, ok, err := scrubbed(plainEvent{position: int64(i + 1), eventType: e.Type, data: string(e.Plain)})
		if err != nil || !ok {
			t.Fatalf("%s: scrubbed %v %v", e.Type, ok, err)
		}
		if !sameJSON(t, erased, []byte(scrub.data)) {
			t.Errorf("%s opened without its key as\n%s\nwant its values null:\n%s", e.Type, erased, scrub.data)
		}
		for _, text := range personalTexts {
			if strings.Contains(string(erased), text) {
				t.Errorf("%s opened without its key still reads %q: %s", e.Type, text, erased)
			}
		}
	}
}

func TestSealedDataHoldsNoPersonalValueAndOpensAsItWasWritten(t *testing.T) {
	f, key := readSealedFixture(t)
	s := &Store{keys: &personKeys{}}
	for i, e := range f.Events {
		ev, err := domain.DecodeEvent(e.Type, e.SchemaVersion, e.Plain)
		if err != nil {
			t.Fatal(err)
		}
		personal, err := s.sealPersonal(context.Background(), "acc_fx", e.ID, ev, e.Plain, map[string]*newPersonKey{"ct_fx": {contactID: "ct_fx", key: key}})
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		stored := personal.stored
		if !strings.Contains(string(stored), `"$personal"`) {
			t.Fatalf("%s stored unsealed: %s", e.Type, stored)
		}
		for _, text := range personalTexts {
			if strings.Contains(string(stored), text) {
				t.Errorf("%s stored reads %q: %s", e.Type, text, stored)
			}
		}
		opened, err := openData(domain.Recorded{ID: e.ID, Position: int64(i + 1), Data: stored}, map[string]*sealing.Sealer{"ct_fx": key})
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		if !sameJSON(t, opened, e.Plain) {
			t.Errorf("%s opened as\n%s\nwant\n%s", e.Type, opened, e.Plain)
		}
		// Bound to its event: under another event's id it does not open.
		if _, err := openData(domain.Recorded{ID: "another", Position: int64(i + 1), Data: stored}, map[string]*sealing.Sealer{"ct_fx": key}); err == nil {
			t.Errorf("%s opened under another event's id", e.Type)
		}
	}
}

// BenchmarkSealPersonal measures sealing one event's personal values under a key already held,
// for each event of the fixture.
func BenchmarkSealPersonal(b *testing.B) {
	f, key := readSealedFixture(b)
	s := &Store{keys: &personKeys{}}
	for _, e := range f.Events {
		ev, err := domain.DecodeEvent(e.Type, e.SchemaVersion, e.Plain)
		if err != nil {
			b.Fatal(err)
		}
		fresh := map[string]*newPersonKey{"ct_fx": {contactID: "ct_fx", key: key}}
		b.Run(e.Type, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.sealPersonal(context.Background(), "acc_fx", e.ID, ev, e.Plain, fresh); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenPersonal measures putting one event's sealed values back, for each event of the
// fixture.
func BenchmarkOpenPersonal(b *testing.B) {
	f, key := readSealedFixture(b)
	keys := map[string]*sealing.Sealer{"ct_fx": key}
	for i, e := range f.Events {
		rec := domain.Recorded{ID: e.ID, Position: int64(i + 1), Data: e.Stored}
		b.Run(e.Type, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := openData(rec, keys); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Wherever the sealed member sits (first in data sealed by the first version, last since), it
// leaves the rest of the object as it was.
func TestTheSealedMemberIsTakenOutWhereverItSits(t *testing.T) {
	for _, c := range []struct {
		data, want string
		found      bool
	}{
		{`{"$personal":{"a":1},"x":1,"y":[2]}`, `{"x":1,"y":[2]}`, true},
		{`{"x":1,"$personal":{"a":1},"y":[2]}`, `{"x":1,"y":[2]}`, true},
		{`{"x":1,"y":[2],"$personal":{"a":1}}`, `{"x":1,"y":[2]}`, true},
		{`{"$personal":{"a":1}}`, `{}`, true},
		{`{ "x" : 1 , "$personal" : {"a":1} }`, `{ "x" : 1 }`, true},
		{`{"x":{"$personal":1}}`, `{"x":{"$personal":1}}`, false},
	} {
		got, member := withoutMember([]byte(c.data), personalMember)
		if string(got) != c.want {
			t.Errorf("%s without %s = %s, want %s", c.data, personalMember, got, c.want)
		}
		if member.Exists() != c.found || c.found && member.Raw != `{"a":1}` {
			t.Errorf("%s: member %q, want it found: %v", c.data, member.Raw, c.found)
		}
	}
}

// Values go back to their places, array elements by index; a place no longer there is skipped.
func TestValuesGoBackToTheirPlaces(t *testing.T) {
	data := `{"email":null,"fields":[{"id":"a","value":null},{"id":"b","value":null}],"contact":{"email":null,"tags":["t"]}}`
	plain := `{"email":"a@example.com","fields.1.value":{"x":[1,2]},"fields.7.value":"gone","contact.email":"c@example.com"}`
	got, err := withValues([]byte(data), []byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"email":"a@example.com","fields":[{"id":"a","value":null},{"id":"b","value":{"x":[1,2]}}],"contact":{"email":"c@example.com","tags":["t"]}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := withValues([]byte(data), []byte(`{"email":`)); err == nil {
		t.Error("values that are not JSON were put back")
	}
}

// BenchmarkNewPersonKey measures making a new contact's key: the key, sealed with the server key
// for its row, and ready to seal with (what every new contact costs its append).
func BenchmarkNewPersonKey(b *testing.B) {
	_, server := sealingtest.NewKey(b)
	keys := &personKeys{server: server}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := keys.make("acc_fx", "ct_fx"); err != nil {
			b.Fatal(err)
		}
	}
}
