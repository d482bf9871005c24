package domain

import (
	"testing"
	"time"
)

func TestParseTimestampReadsRFC3339WithLowerCaseTAndZ(t *testing.T) {
	want := time.Date(2030, 1, 31, 9, 30, 0, 0, time.UTC)
	for _, s := range []string{"2030-01-31T09:30:00Z", "2030-01-31t09:30:00z", "2030-01-31t09:30:00Z", "2030-01-31T10:30:00+01:00", "2030-01-31t09:30:00.000z"} {
		got, err := ParseTimestamp(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTimestamp(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "2030-01-31", "2030-01-31 09:30:00Z", "2030-01-31T09:30:00", "2030-13-31T09:30:00Z", "tomorrow"} {
		if got, err := ParseTimestamp(s); err == nil {
			t.Errorf("ParseTimestamp(%q) = %v, want an error", s, got)
		}
	}
}
