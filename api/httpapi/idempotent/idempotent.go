// Package idempotent is the port between the HTTP plumbing's Idempotency-Key handling
// (httpapi.Idempotent) and the store that keeps the keys (infra/idempotency): the values they
// exchange and the Store interface the plumbing runs. It holds no adapter and imports nothing of
// the project, so that the API packages import no infra package.
package idempotent

import "context"

// Store keeps the claims and answers of keys (infra/idempotency.Store).
type Store interface {
	// Claim decides what to do with a request and, to perform or resume it, claims its key for
	// this attempt.
	Claim(ctx context.Context, req Request) (Claim, error)
	// KeepOutcomes keeps what the commands of the claim's request returned, while the request
	// goes on, so that a retry after a crash resumes from them. It leaves a key that is done as
	// it is.
	KeepOutcomes(ctx context.Context, c Claim, outcomes []byte) error
	// KeepOutcomesAndYield keeps the outcomes and gives up the lease in one write, for an attempt
	// that ends without an answer to keep after its commands succeeded.
	KeepOutcomesAndYield(ctx context.Context, c Claim, outcomes []byte) error
	// Complete keeps the answer of the claim's request; later retries get it (Replay).
	Complete(ctx context.Context, c Claim, res Response) error
	// Release forgets a key whose request performed nothing.
	Release(ctx context.Context, c Claim) error
	// Yield gives up the lease of an attempt that ends without an answer to keep.
	Yield(ctx context.Context, c Claim) error
}

// Request is one use of an Idempotency-Key.
type Request struct {
	Scope       string   // whose keys: "account:<id>" or "operator:<token digest>"
	Key         string   // the header's value
	Fingerprint [32]byte // SHA-256 of the request's method, path, query and body
}

// Decision is what to do with a request, given its key.
type Decision int

const (
	// Perform the request: the key is new, expired, or its last attempt performed nothing.
	Perform Decision = iota + 1
	// Replay the kept Response.
	Replay
	// Resume: an earlier attempt performed the request without answering it; answer from its
	// Outcomes, performing nothing again.
	Resume
	// Orphaned: an earlier attempt performed the request (the log holds its write) but stopped
	// before it kept its outcome or answer: nothing is left to answer from.
	Orphaned
	// Mismatch: the key was used for another request (method, path, query or body).
	Mismatch
	// InProgress: another attempt holds the key.
	InProgress
	// Unreadable: an earlier attempt performed the request, but what was kept of it is sealed with
	// a server key that is no longer configured (FUNNEL_SECRET_KEY rotated too soon, a SQLite key
	// file lost): it is not performed again, and its answer cannot be given.
	Unreadable
)

// Response is a kept answer.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Claim is the outcome of Store.Claim: the decision, and the claim an attempt that goes on holds.
type Claim struct {
	Decision Decision
	ID       string   // stamped on what the request appends (Perform, Resume)
	Response Response // Replay
	Outcomes []byte   // Resume: what the commands of the earlier attempt returned
	// Attempt is the store's own record of the attempt that holds the key (which key, which
	// attempt): the plumbing hands it back to the store untouched.
	Attempt any
}
