package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/funnelhq/funnel/api/httpapi/idempotent"
	"github.com/funnelhq/funnel/commands"
)

// keepOutcomesAfter is how long after its first command succeeded a request with an
// Idempotency-Key may take to answer before the commands' outcomes are kept on their own. Most
// writes answer within a few milliseconds of their command (the contact and lead read models
// commit with the events): keeping the outcomes first would be a write of the key's row that the
// answer's own write overwrites at once. A request that waits longer (for a relayed read model, a
// webhook replay) keeps them, so that a crash during the wait still leaves a retry something to
// answer from.
const keepOutcomesAfter = 50 * time.Millisecond

// outcomeKeeper keeps the outcomes of a request's commands only when they are needed: after
// keepOutcomesAfter without an answer (and from then on after every command, as it succeeds),
// or, through pending, with the write that gives the key up when the request ends without an
// answer to keep. Its writes are made one at a time, the latest outcomes last, and none starts
// once stop was called, so none lands after the answer is kept.
type outcomeKeeper struct {
	ctx   context.Context
	r     *http.Request // for the log of a failed write
	store idempotent.Store
	claim idempotent.Claim
	after time.Duration

	mu      sync.Mutex
	latest  []commands.Outcome // the outcomes so far of this attempt, nil before a command succeeded
	timer   *time.Timer
	late    bool // the delay passed: every outcome is kept as it comes
	stopped bool // the handler ended: no write starts any more
	dirty   bool // latest has not been handed to a write yet (once late)
	busy    bool // a write is under way
	writing sync.WaitGroup
}

func newOutcomeKeeper(ctx context.Context, r *http.Request, store idempotent.Store, claim idempotent.Claim, after time.Duration) *outcomeKeeper {
	return &outcomeKeeper{ctx: ctx, r: r, store: store, claim: claim, after: after}
}

// performed is commands.Idempotent.Performed: it is told the outcomes so far after each command
// that succeeded.
func (k *outcomeKeeper) performed(_ context.Context, outcomes []commands.Outcome) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	k.latest = outcomes
	switch {
	case k.late:
		k.write()
	case k.timer == nil:
		k.timer = time.AfterFunc(k.after, k.expire)
	}
}

// expire runs when the request did not answer within the delay of its first command's success.
func (k *outcomeKeeper) expire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	k.late = true
	k.write()
}

// write hands the latest outcomes to the writer, starting it unless it runs. k.mu is held.
func (k *outcomeKeeper) write() {
	k.dirty = true
	if k.busy {
		return // the running writer takes them next
	}
	k.busy = true
	k.writing.Go(k.writer)
}

// writer keeps the latest outcomes until none are left that it has not kept.
func (k *outcomeKeeper) writer() {
	for {
		k.mu.Lock()
		if !k.dirty {
			k.busy = false
			k.mu.Unlock()
			return
		}
		outcomes := k.latest
		k.dirty = false
		k.mu.Unlock()
		raw, err := json.Marshal(outcomes)
		if err == nil {
			err = k.store.KeepOutcomes(k.ctx, k.claim, raw)
		}
		noteFailure(k.r, "keep the outcome", err)
	}
}

// stop is called when the handler ended, before the answer is kept or the lease given up: no
// write of the outcomes starts after it, and it returns once the one under way (if any) ended.
func (k *outcomeKeeper) stop() {
	k.mu.Lock()
	k.stopped = true
	if k.timer != nil {
		k.timer.Stop() // an expire that already started finds stopped set
	}
	k.mu.Unlock()
	k.writing.Wait()
}

// pending returns the outcomes of this attempt as JSON, nil when no command of it succeeded (a
// resumed attempt whose commands all returned the earlier attempt's kept outcomes has none: they
// are kept already). Called after stop.
func (k *outcomeKeeper) pending() ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.latest == nil {
		return nil, nil
	}
	return json.Marshal(k.latest)
}

// yield gives the key up after a request that ends without an answer to keep: with its outcomes,
// in one write, when a command of this attempt succeeded (a retry resumes from them), or alone
// (a retry resumes from the earlier attempt's outcomes, or asks the log). Called after stop.
func (k *outcomeKeeper) yield() {
	raw, err := k.pending()
	switch {
	case err != nil:
		noteFailure(k.r, "keep the outcome", err)
		noteFailure(k.r, "yield", k.store.Yield(k.ctx, k.claim))
	case raw != nil:
		noteFailure(k.r, "keep the outcome and yield", k.store.KeepOutcomesAndYield(k.ctx, k.claim, raw))
	default:
		noteFailure(k.r, "yield", k.store.Yield(k.ctx, k.claim))
	}
}
