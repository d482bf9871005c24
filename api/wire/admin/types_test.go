package admin

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/funnelhq/funnel/api/wire"
)

// The generator's configuration (oapi-codegen.yaml, overlay.yaml) makes a number a float64, a
// time a wire.DateTime and a history event's data the stored JSON: each shows in what an answer
// writes.
func TestGeneratedTypesWriteNumbersTimesAndEventDataAsTheContractSays(t *testing.T) {
	var answer AnswerValue
	if err := answer.FromAnswerValue1(1234567.891); err != nil { // float32 would write 1234567.9
		t.Fatal(err)
	}
	event := HistoryEvent{
		Data:       json.RawMessage(`{"b":1,"a":9007199254740993}`), // as recorded: order and digits kept
		OccurredAt: wire.At(time.Date(2026, 11, 26, 23, 5, 7, 123456789, time.FixedZone("CET", 3600))),
		Metadata:   EventMetadata{AccountId: "acc_1", Actor: "operator"},
	}
	b, err := json.Marshal(struct {
		Answer AnswerValue  `json:"answer"`
		Event  HistoryEvent `json:"event"`
	}{answer, event})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"answer":1234567.891,"event":{"data":{"b":1,"a":9007199254740993},"eventId":"",` +
		`"metadata":{"accountId":"acc_1","actor":"operator"},"occurredAt":"2026-11-26T22:05:07.123Z",` +
		`"position":0,"schemaVersion":0,"streamId":"","type":"","version":0}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}
