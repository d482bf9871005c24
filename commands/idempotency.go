package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/funnelhq/funnel/domain"
)

// Idempotent is what a request carrying an Idempotency-Key tells the commands it runs
// (WithIdempotency). The HTTP layer keeps the answer of such a request; these hooks close the
// gap between the moment its write is committed and the moment its answer is kept:
//
//   - every append of the request is stamped with ID, and the log accepts one append per id
//     (domain.ErrAlreadyPerformed), so two attempts of one request never both perform it;
//   - the result of every command that succeeds is handed to Performed at once, before the
//     request goes on to answer (which waits for the read models): the HTTP layer keeps it when
//     the answer is late or cannot be kept, so that a retry answers from it;
//   - an attempt that finds such results of an earlier attempt (Earlier) gets them back from its
//     commands instead of running them again, and answers from them.
type Idempotent struct {
	// ID is stamped on the events the request appends (domain.Metadata.IdempotencyID).
	ID string
	// Earlier are the outcomes an earlier attempt of the request kept: its commands succeeded,
	// but it could not answer. The commands of this attempt return them, in order.
	Earlier []Outcome
	// Performed is told, after every command that succeeded, the outcomes so far.
	Performed func(ctx context.Context, outcomes []Outcome)

	mu       sync.Mutex
	outcomes []Outcome
	lost     bool
}

// Outcome is what one command of a request returned: its result, as JSON.
type Outcome struct {
	Command string          `json:"command"`
	Result  json.RawMessage `json:"result"`
}

type idempotentKey struct{}

// WithIdempotency returns a context whose commands stamp, report and replay as idem says.
func WithIdempotency(ctx context.Context, idem *Idempotent) context.Context {
	return context.WithValue(ctx, idempotentKey{}, idem)
}

func idempotentOf(ctx context.Context) *Idempotent {
	idem, _ := ctx.Value(idempotentKey{}).(*Idempotent)
	return idem
}

// IdempotencyID is the Idempotency-Key claim of ctx's request ("" outside such a request): the
// id its appends carry, and what else it records marks, so that a retry finds it (a webhook
// replay, webhooks.ReplayRequest.IdempotencyID).
func IdempotencyID(ctx context.Context) string { return idempotencyID(ctx) }

// idempotencyID is the id the appends of ctx's request carry ("" outside such a request).
func idempotencyID(ctx context.Context) string {
	if idem := idempotentOf(ctx); idem != nil {
		return idem.ID
	}
	return ""
}

// HasPerformed tells whether a command of the request succeeded, in this attempt or an earlier one.
func (i *Idempotent) HasPerformed() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.outcomes) > 0
}

// Lost tells whether an append of the request found its id used: another attempt of the same
// request performed it, and will answer it.
func (i *Idempotent) Lost() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.lost
}

// earlier returns the next outcome an earlier attempt kept, if any is left.
func (i *Idempotent) earlier(command string) (json.RawMessage, bool, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	n := len(i.outcomes)
	if n >= len(i.Earlier) {
		return nil, false, nil
	}
	o := i.Earlier[n]
	if o.Command != command {
		return nil, false, fmt.Errorf("commands: the earlier attempt of this request ran %s where this one runs %s", o.Command, command)
	}
	i.outcomes = append(i.outcomes, o)
	return o.Result, true, nil
}

func (i *Idempotent) record(ctx context.Context, command string, result json.RawMessage) {
	i.mu.Lock()
	i.outcomes = append(i.outcomes, Outcome{Command: command, Result: result})
	outcomes := append([]Outcome(nil), i.outcomes...)
	i.mu.Unlock()
	if i.Performed != nil {
		i.Performed(ctx, outcomes)
	}
}

func (i *Idempotent) markLost() {
	i.mu.Lock()
	i.lost = true
	i.mu.Unlock()
}

// replayable is the decorator that applies Idempotent to every command (decorate).
type replayable[C any, R any] struct {
	name string
	next Handler[C, R]
}

func (h replayable[C, R]) Handle(ctx context.Context, cmd C) (R, error) {
	var res R
	idem := idempotentOf(ctx)
	if idem == nil {
		return h.next.Handle(ctx, cmd)
	}
	if raw, ok, err := idem.earlier(h.name); err != nil {
		return res, err
	} else if ok {
		if err := json.Unmarshal(raw, &res); err != nil {
			return res, fmt.Errorf("commands: the kept result of %s: %w", h.name, err)
		}
		return res, nil
	}
	res, err := h.next.Handle(ctx, cmd)
	if errors.Is(err, domain.ErrAlreadyPerformed) {
		idem.markLost()
	}
	if err != nil {
		return res, err
	}
	raw, err := json.Marshal(res)
	if err != nil {
		// Results are plain data (TestResultsSurviveJSON): this is a bug, and the request is
		// answered 500 and treated as of unknown outcome.
		return res, fmt.Errorf("commands: encode the result of %s: %w", h.name, err)
	}
	idem.record(ctx, h.name, raw)
	return res, nil
}
