package webhooks

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	s := Schedule{Base: time.Second, Cap: time.Minute}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		status int
		value  string
		want   time.Duration
		ok     bool
	}{
		{http.StatusTooManyRequests, "30", 30 * time.Second, true},
		{http.StatusServiceUnavailable, "0", 0, true},
		{http.StatusTooManyRequests, "3600", time.Minute, true},                    // capped
		{http.StatusServiceUnavailable, "10000000000", time.Minute, true},          // more seconds than a Duration holds: capped
		{http.StatusServiceUnavailable, "9223372036854775807", time.Minute, true},  // not a negative wait
		{http.StatusServiceUnavailable, "99999999999999999999", time.Minute, true}, // beyond an int64: capped, not ignored
		{http.StatusTooManyRequests, "+30", 0, false},
		{http.StatusServiceUnavailable, now.Add(20 * time.Second).Format(http.TimeFormat), 20 * time.Second, true},
		{http.StatusTooManyRequests, now.Add(2 * time.Hour).Format(http.TimeFormat), time.Minute, true}, // capped
		{http.StatusTooManyRequests, now.Add(-time.Hour).Format(http.TimeFormat), 0, true},              // past: now
		{http.StatusTooManyRequests, "-5", 0, false},
		{http.StatusTooManyRequests, "soon", 0, false},
		{http.StatusTooManyRequests, "", 0, false},
		{http.StatusInternalServerError, "30", 0, false}, // only 429 and 503 are honoured
	} {
		h := http.Header{}
		if c.value != "" {
			h.Set("Retry-After", c.value)
		}
		got, ok := s.retryAfter(c.status, h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%d Retry-After %q = %s, %v; want %s, %v", c.status, c.value, got, ok, c.want, c.ok)
		}
	}
}

// Attempt n+1 waits base × 3^(n-1), within ±20%, and never more than the cap.
func TestDelayAfter(t *testing.T) {
	s := Schedule{Base: time.Second, Cap: time.Minute}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 3 * time.Second, 3: 9 * time.Second, 4: 27 * time.Second} {
		for range 50 {
			if got := s.delayAfter(n); got < want*8/10 || got > want*12/10 {
				t.Fatalf("delay after attempt %d = %s, want %s ±20%%", n, got, want)
			}
		}
	}
	for range 50 {
		if got := s.delayAfter(9); got > time.Minute {
			t.Fatalf("delay after attempt 9 = %s, above the cap", got)
		}
	}
}
