// Package ratelimit counts requests in sliding windows that are exact: a rule of N requests per
// window admits N in any window of that length, never N+1 (a GCRA or a fixed window would let
// up to 2N through around a window's edge). Each window is a log of the times of the requests it
// admitted: a decision drops the times that left the window, counts the rest, and adds its own.
//
// Memory keeps the logs in this process; Redis keeps them in sorted sets, one atomic script per
// decision on Redis's clock, so that every process of a deployment shares them; Fallback uses
// Redis and decides in this process's memory while Redis does not answer.
//
// The rules, counts and decisions they exchange with the HTTP plumbing, and the Limiter they
// implement, are the port's (api/httpapi/limits); the window algorithm is here, beside its stores.
package ratelimit

import (
	"time"

	"github.com/funnelhq/funnel/api/httpapi/limits"
)

// The limiters of this package are the port's.
var (
	_ limits.Limiter = (*Memory)(nil)
	_ limits.Limiter = (*Redis)(nil)
	_ limits.Limiter = (*Fallback)(nil)
)

// windowKey names the window of a count: its rule's and its subject's.
func windowKey(c limits.Count) string { return c.Rule.Name + ":" + c.Subject }

// slot is what an admitted decision counted (the limits.Slot this package's limiters hand out).
// A limits.Slot that is no slot (nil, the zero Slot) counted nothing.
type slot struct {
	keys   []string
	at     time.Duration // Memory: the time the decision was counted at
	member string        // Redis: the member the decision added to each sorted set
	shared bool          // counted in Redis (Fallback releases it there)
}

// slotOf is what s counted, or nothing.
func slotOf(s limits.Slot) slot {
	held, _ := s.(slot)
	return held
}

// window is what a store saw in one window during a decision, before counting the request.
type window struct {
	count int // requests in the window
	// frees is how long until the request whose departure frees the next slot leaves the window:
	// the oldest when the window has room, the one that brings it below Max when it is full. 0
	// when the window is empty.
	frees time.Duration
}

// decide turns what a store saw in each window into the verdict: admitted if every window has
// room. take tells whether the request was counted in the windows it takes (the store adds it
// only when admitted).
func decide(counts []limits.Count, seen []window) limits.Decision {
	d := limits.Decision{Allowed: true, Statuses: make([]limits.Status, len(counts))}
	for i, c := range counts {
		if seen[i].count >= c.Rule.Max {
			d.Allowed = false
		}
	}
	for i, c := range counts {
		w := seen[i]
		s := limits.Status{Rule: c.Rule, Remaining: max(c.Rule.Max-w.count, 0), Reset: w.frees}
		switch {
		case w.count >= c.Rule.Max:
			s.Refused = true
		case d.Allowed && !c.CheckOnly:
			s.Counted = true
			s.Remaining--
			if w.count == 0 { // the request itself is the oldest in its window
				s.Reset = c.Rule.Window
			}
		}
		if w.count == 0 && !s.Counted {
			s.Reset = c.Rule.Window
		}
		d.Statuses[i] = s
	}
	return d
}

// taken are the keys an admitted decision counts the request in.
func taken(counts []limits.Count) []string {
	var keys []string
	for _, c := range counts {
		if !c.CheckOnly {
			keys = append(keys, windowKey(c))
		}
	}
	return keys
}
