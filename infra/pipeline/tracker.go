package pipeline

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Tracker knows how far each read model (and cache invalidator) has applied the log in this
// process, so that a write handler can wait until the read models show its write (DESIGN.md
// invariant 6).
type Tracker struct {
	mu        sync.Mutex
	positions map[string]int64
	reads     map[string]func(eventType string) bool // what each shows of the log (nil: all)
	changed   chan struct{}                          // closed and replaced on every advance
	// remote are the read models another process runs (several processes, Pipeline.Share): their
	// positions are their checkpoints, read while a wait needs them (pollRemote).
	remote  map[string]bool
	waiting atomic.Int64 // waits for a remote read model
	kick    chan struct{}
}

func newTracker() *Tracker {
	return &Tracker{positions: map[string]int64{}, reads: map[string]func(string) bool{}, changed: make(chan struct{}),
		remote: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// registerRemote adds a read model that another process runs.
func (t *Tracker) registerRemote(name string, reads func(eventType string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.positions[name] = 0
	t.reads[name] = reads
	t.remote[name] = true
}

// hold marks a read model as run by this process from its checkpoint pos.
func (t *Tracker) hold(name string, pos int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.remote[name] = false
	t.positions[name] = max(t.positions[name], pos)
	t.notifyLocked()
}

// release marks a read model as run by another process: its position is its checkpoint again.
func (t *Tracker) release(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.remote[name] = true
}

func (t *Tracker) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// pollRemote reads the checkpoints of the read models other processes run, every remotePoll
// while some wait needs one, until ctx ends.
func (t *Tracker) pollRemote(ctx context.Context, load func(context.Context) (map[string]int64, error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.kick:
		}
		for t.waiting.Load() > 0 && ctx.Err() == nil {
			if positions, err := load(ctx); err == nil {
				t.mu.Lock()
				moved := false
				for name, pos := range positions {
					if t.remote[name] && pos > t.positions[name] {
						t.positions[name] = pos
						moved = true
					}
				}
				if moved {
					t.notifyLocked()
				}
				t.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(remotePoll):
			}
		}
	}
}

// remotePoll is how often a wait for read models that other processes run reads their
// checkpoints.
const remotePoll = 5 * time.Millisecond

// register adds a reader of the log at pos; reads tells which event types it shows to a
// request (nil: any), so that a write of other types need not wait for it (WaitWrite).
func (t *Tracker) register(name string, pos int64, reads func(eventType string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.positions[name] = pos
	t.reads[name] = reads
}

func (t *Tracker) advance(name string, pos int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pos <= t.positions[name] {
		return
	}
	t.positions[name] = pos
	t.notifyLocked()
}

// lowest returns the lowest position of the readers that show any of types (nil: of them all),
// and a channel closed at the next advance.
func (t *Tracker) lowest(types []string, only func(name string) bool) (int64, bool, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lowest := int64(-1)
	remote := false
	for name, pos := range t.positions {
		if types != nil && !readsAny(t.reads[name], types) || only != nil && !only(name) {
			continue
		}
		if lowest < 0 || pos < lowest {
			lowest = pos
			remote = t.remote[name]
		}
	}
	if lowest < 0 && types != nil {
		return math.MaxInt64, false, t.changed // no reader shows these types: nothing to wait for
	}
	return max(lowest, 0), remote, t.changed
}

func readsAny(reads func(string) bool, types []string) bool {
	if reads == nil {
		return true
	}
	for _, typ := range types {
		if reads(typ) {
			return true
		}
	}
	return false
}

// WaitReadModels blocks until every read model has applied the log up to pos, or ctx ends.
func (t *Tracker) WaitReadModels(ctx context.Context, pos int64) error {
	return t.wait(ctx, pos, nil)
}

// WaitWrite blocks until every read model that shows events of the given types, the types a
// write appended, has applied the log up to pos, the write's position, or ctx ends. Read models
// applied inline (eventstore.InlineProjection) are not among them: the write's transaction
// applied them. When no relayed read model shows any of the types, it returns at once. A write
// of unknown types (nil) waits for every read model, as WaitReadModels.
func (t *Tracker) WaitWrite(ctx context.Context, pos int64, types []string) error {
	if len(types) == 0 {
		types = nil
	}
	return t.wait(ctx, pos, types)
}

func (t *Tracker) wait(ctx context.Context, pos int64, types []string) error {
	return t.waitFor(ctx, pos, types, nil)
}

// readModel tells a read model from a cache invalidator.
func (t *Tracker) readModel(name string) bool {
	_, ok := t.remote[name]
	return ok
}

// appliedBy tells whether every read model (not an invalidator) that shows one of types has
// applied the log up to pos; with no types, yes.
func (t *Tracker) appliedBy(pos int64, types []string) bool {
	if len(types) == 0 {
		return true
	}
	have, _, _ := t.lowest(types, t.readModel)
	return have >= pos
}

// waitApplied waits until appliedBy, or ctx ends.
func (t *Tracker) waitApplied(ctx context.Context, pos int64, types []string) error {
	if len(types) == 0 {
		return nil
	}
	return t.waitFor(ctx, pos, types, t.readModel)
}

func (t *Tracker) waitFor(ctx context.Context, pos int64, types []string, only func(string) bool) error {
	counted := false
	defer func() {
		if counted {
			t.waiting.Add(-1)
		}
	}()
	for {
		have, remote, changed := t.lowest(types, only)
		if have >= pos {
			return nil
		}
		if remote && !counted {
			counted = true
			t.waiting.Add(1)
			select {
			case t.kick <- struct{}{}:
			default:
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
