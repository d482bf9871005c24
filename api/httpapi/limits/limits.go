// Package limits is the port between the HTTP plumbing's rate limits (httpapi.RateLimits) and
// the stores of sliding windows (infra/ratelimit: Memory, Redis, Fallback): the rules, the
// counts and decisions they exchange, and the Limiter interface the plumbing runs. It holds no
// adapter and imports nothing of the project, so that the API packages import no infra package.
package limits

import (
	"context"
	"time"
)

// Limiter is a store of sliding windows (infra/ratelimit: Memory, or Fallback on Redis).
type Limiter interface {
	// Decide admits a request under every count at once, counting it in each window it takes,
	// or refuses it and counts it in none.
	Decide(ctx context.Context, counts []Count) (Decision, error)
	// Release takes back what an admitted decision counted: the request was refused by a later
	// decision, and a refused request counts in no window.
	Release(ctx context.Context, slot Slot) error
}

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

// Slot is what an admitted decision counted, in the terms of the limiter that decided it (which
// windows, and the entry it added to them): the plumbing only hands it back to Release. The zero
// Slot (nil) counted nothing.
type Slot any
