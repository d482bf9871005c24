package webhooks

import (
	"slices"
	"testing"
)

// A rotation keeps the replaced secrets that still sign at its time, newest first, and no more
// than maxOlderSecrets; those whose day has ended go.
func TestAfterRotation(t *testing.T) {
	older := []olderSecret{{"b", 500}, {"c", 90}, {"d", 400}, {"e", 300}, {"f", 200}}
	got := afterRotation(100, "a", 600, older)
	want := []olderSecret{{"a", 600}, {"b", 500}, {"d", 400}, {"e", 300}}
	if !slices.Equal(got, want) {
		t.Fatalf("afterRotation = %v, want %v", got, want)
	}
	if got := afterRotation(700, "a", 600, older); got != nil {
		t.Fatalf("after every secret's end: %v", got)
	}
	if got := afterRotation(100, "", 0, nil); formatOlderSecrets(got) != "" {
		t.Fatalf("a first rotation's older secrets = %q", formatOlderSecrets(got))
	}
	parsed, err := parseOlderSecrets("wh_x", formatOlderSecrets(want))
	if err != nil || !slices.Equal(parsed, want) {
		t.Fatalf("parse(format(%v)) = %v, %v", want, parsed, err)
	}
}
