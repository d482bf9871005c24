package commands

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// The result of every command is kept as JSON when a request with an Idempotency-Key performs
// it, and given back from that JSON to a later attempt: it must be plain data that survives the
// trip (exported fields, no interfaces or functions). New commands are checked by being a field
// or a method of Handlers.
func TestResultsSurviveJSON(t *testing.T) {
	handlers := reflect.TypeFor[Handlers]()
	check := func(name string, handler reflect.Type) {
		handle, ok := handler.MethodByName("Handle")
		if !ok {
			t.Fatalf("Handlers.%s has no Handle method", name)
		}
		if problem := jsonSafe(handle.Type.Out(0), map[reflect.Type]bool{}); problem != "" {
			t.Errorf("the result of %s does not survive JSON: %s", name, problem)
		}
	}
	for i := range handlers.NumField() {
		if f := handlers.Field(i); f.IsExported() {
			check(f.Name, f.Type)
		}
	}
	for i := range handlers.NumMethod() {
		m := handlers.Method(i) // func(Handlers) the handler: a command built on demand
		check(m.Name, m.Type.Out(0))
	}
}

// jsonSafe returns what in t would not come back from JSON as it went, or "".
func jsonSafe(t reflect.Type, seen map[reflect.Type]bool) string {
	if seen[t] || t == reflect.TypeFor[time.Time]() || t == reflect.TypeFor[json.RawMessage]() {
		return ""
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return ""
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return jsonSafe(t.Elem(), seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return t.String() + ": a map without string keys"
		}
		return jsonSafe(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				return t.String() + "." + f.Name + " is not encoded"
			}
			if p := jsonSafe(f.Type, seen); p != "" {
				return p
			}
		}
		return ""
	default:
		return t.String() + " is a " + t.Kind().String()
	}
}

// countingHandler succeeds with the id it is given and counts its runs.
type countingHandler struct{ runs *int }

func (h countingHandler) Handle(_ context.Context, cmd CreateTag) (CreateTagResult, error) {
	*h.runs++
	if cmd.Name == "taken" {
		return CreateTagResult{}, domain.ErrAlreadyPerformed
	}
	return CreateTagResult{TagID: "tag_" + cmd.Name, Position: int64(*h.runs)}, nil
}

func TestIdempotentCommandsKeepAndReplayTheirOutcomes(t *testing.T) {
	runs := 0
	h := decorate[CreateTag, CreateTagResult](countingHandler{runs: &runs}, zap.NewNop(), &recordingObserver{})
	var kept []Outcome
	first := &Idempotent{ID: "idem_1", Performed: func(_ context.Context, o []Outcome) { kept = o }}
	res, err := h.Handle(WithIdempotency(context.Background(), first), CreateTag{Name: "a"})
	if err != nil || res.TagID != "tag_a" || runs != 1 || !first.HasPerformed() {
		t.Fatalf("first attempt: %+v, %v, %d runs", res, err, runs)
	}
	if len(kept) != 1 || kept[0].Command != "CreateTag" {
		t.Fatalf("kept %+v, want the outcome of CreateTag", kept)
	}

	// A later attempt gets the kept result back, and the command does not run again.
	retry := &Idempotent{ID: "idem_1", Earlier: kept, Performed: func(context.Context, []Outcome) { t.Fatal("a replayed outcome was kept again") }}
	again, err := h.Handle(WithIdempotency(context.Background(), retry), CreateTag{Name: "a"})
	if err != nil || again != res || runs != 1 || !retry.HasPerformed() {
		t.Fatalf("retry: %+v, %v, %d runs; want %+v from the first attempt", again, err, runs, res)
	}
	// An earlier outcome of another command is an error, not a wrong answer.
	other := decorate[CreateCRM, CreateCRMResult](nil, zap.NewNop(), &recordingObserver{})
	if _, err := other.Handle(WithIdempotency(context.Background(), &Idempotent{Earlier: kept}), CreateCRM{}); err == nil {
		t.Fatal("CreateCRM replayed the outcome of CreateTag")
	}

	// An append refused because another attempt performed the request marks this one lost.
	lost := &Idempotent{ID: "idem_2"}
	if _, err := h.Handle(WithIdempotency(context.Background(), lost), CreateTag{Name: "taken"}); !errors.Is(err, domain.ErrAlreadyPerformed) || !lost.Lost() || lost.HasPerformed() {
		t.Fatalf("lost attempt: %v, lost %v", err, lost.Lost())
	}
	// Without an Idempotency-Key nothing is kept or replayed.
	if _, err := h.Handle(context.Background(), CreateTag{Name: "b"}); err != nil || runs != 3 {
		t.Fatalf("plain run: %v, %d runs", err, runs)
	}
}
