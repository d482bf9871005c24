package wire

import (
	"encoding/json"
	"testing"
	"time"
)

func TestDateTimeIsWrittenInTheWireLayoutAndReadBack(t *testing.T) {
	at := time.Date(2026, 11, 26, 23, 5, 7, 123456789, time.FixedZone("CET", 3600))
	b, err := json.Marshal(struct {
		At DateTime `json:"at"`
	}{At(at)})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"at":"2026-11-26T22:05:07.123Z"}` {
		t.Fatalf("got %s", b)
	}
	var back struct {
		At DateTime `json:"at"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.At.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("read back %v, want %v", back.At, at.Truncate(time.Millisecond))
	}
	if err := json.Unmarshal([]byte(`{"at":12}`), &back); err == nil {
		t.Fatal("a number was read as a date-time")
	}
}
