// Package ratelimit counts requests in sliding windows that are exact: a rule of N requests per
// window admits N in any window of that length, never N+1 (a GCRA or a fixed window would let
// up to 2N through around a window's edge). Each window is a log of the times of the requests it
// admitted: a decision drops the times that left the window, counts the rest, and adds its own.
//
// Memory keeps the logs in this process; Redis keeps them in sorted sets, one atomic script per
// decision on Redis's clock, so that every process of a deployment shares them; Fallback uses
// Redis and decides in this process's memory while Redis does not answer.
package ratelimit

import (
	"context"
	"time"
)

// Rule is one limit: at most Max requests in any window of length Window.
type Rule struct {
	Name        string // names the rule's windows (a part of their keys) and the rule in logs
	Max         int
	Window      time.Duration
	Description string // what a refused client is told: "100 writes per minute per account"
}

// Count asks a decision to count one request of Subject (an address, an account) under Rule.
type Count struct {
	Rule    Rule
	Subject string
	// CheckOnly admits the request only if the window has room, but counts nothing in it: the
	// failed-authentication window is checked on every request and counted only on a failure.
	CheckOnly bool
}

func (c Count) key() string { return c.Rule.Name + ":" + c.Subject }

// Decision is the verdict on one request under several rules at once: admitted under all of
// them, and counted in each window it takes, or refused and counted in none.
type Decision struct {
	Allowed bool
	// Statuses are the windows after the decision, one per Count, in the order asked.
	Statuses []Status
	// Slot is what an admitted decision counted, to give back with Release.
	Slot Slot
}

// Status is one window as a decision left it.
type Status struct {
	Rule      Rule
	Counted   bool          // the request was counted in this window
	Refused   bool          // this window was full: the request was refused
	Remaining int           // requests the window admits now
	Reset     time.Duration // until the next request leaves the window and frees a slot
}

// Slot identifies what an admitted decision counted. The zero Slot counted nothing.
type Slot struct {
	keys   []string
	at     time.Duration // Memory: the time the decision was counted at
	member string        // Redis: the member the decision added to each sorted set
	shared bool          // counted in Redis (Fallback releases it there)
}

// Limiter is a store of windows: Memory, Redis or Fallback.
type Limiter interface {
	// Decide admits a request under every count at once, counting it in each window it takes,
	// or refuses it and counts it in none.
	Decide(ctx context.Context, counts []Count) (Decision, error)
	// Release takes back what an admitted decision counted: the request was refused by a later
	// decision, and a refused request counts in no window.
	Release(ctx context.Context, slot Slot) error
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
func decide(counts []Count, seen []window) Decision {
	d := Decision{Allowed: true, Statuses: make([]Status, len(counts))}
	for i, c := range counts {
		if seen[i].count >= c.Rule.Max {
			d.Allowed = false
		}
	}
	for i, c := range counts {
		w := seen[i]
		s := Status{Rule: c.Rule, Remaining: max(c.Rule.Max-w.count, 0), Reset: w.frees}
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
func taken(counts []Count) []string {
	var keys []string
	for _, c := range counts {
		if !c.CheckOnly {
			keys = append(keys, c.key())
		}
	}
	return keys
}
