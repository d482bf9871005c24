package webhooks

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Schedule says when a failed delivery is tried again (decisions.md "Webhooks"): attempt n+1
// waits base × 3^(n-1), ±20% jitter, capped; a 429 or 503 with Retry-After waits that long
// instead, capped too.
type Schedule struct {
	Base, Cap time.Duration
}

// delayAfter returns how long to wait after the n-th failed attempt.
func (s Schedule) delayAfter(n int) time.Duration {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     s.Base,
		RandomizationFactor: 0.2,
		Multiplier:          3,
		MaxInterval:         s.Cap,
	}
	b.Reset()
	d := b.NextBackOff()
	for i := 1; i < n; i++ {
		d = b.NextBackOff()
	}
	return min(d, s.Cap)
}

// retryAfter reads a Retry-After header (seconds or an HTTP date) of a 429 or 503 answer.
func (s Schedule) retryAfter(status int, header http.Header, now time.Time) (time.Duration, bool) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0, false
	}
	v := header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 63); err == nil || errors.Is(err, strconv.ErrRange) {
		// Capped in seconds before it becomes a Duration, which a huge number would overflow
		// to a negative wait: every attempt at once. More seconds than an int64 holds are
		// more than the cap too.
		if err != nil || secs >= uint64(s.Cap/time.Second) {
			return s.Cap, true
		}
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), s.Cap), true
	}
	return 0, false
}
