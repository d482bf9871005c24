package pipeline

import (
	"context"
	"math"
	"sync"
)

// Tracker knows how far each read model (and cache invalidator) has applied the log in this
// process, so that a write handler can wait until the read models show its write (DESIGN.md
// invariant 6).
type Tracker struct {
	mu        sync.Mutex
	positions map[string]int64
	reads     map[string]func(eventType string) bool // what each shows of the log (nil: all)
	changed   chan struct{}                          // closed and replaced on every advance
}

func newTracker() *Tracker {
	return &Tracker{positions: map[string]int64{}, reads: map[string]func(string) bool{}, changed: make(chan struct{})}
}

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
	close(t.changed)
	t.changed = make(chan struct{})
}

// lowest returns the lowest position of the readers that show any of types (nil: of them all),
// and a channel closed at the next advance.
func (t *Tracker) lowest(types []string) (int64, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lowest := int64(-1)
	for name, pos := range t.positions {
		if types != nil && !readsAny(t.reads[name], types) {
			continue
		}
		if lowest < 0 || pos < lowest {
			lowest = pos
		}
	}
	if lowest < 0 && types != nil {
		return math.MaxInt64, t.changed // no reader shows these types: nothing to wait for
	}
	return max(lowest, 0), t.changed
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
	for {
		have, changed := t.lowest(types)
		if have >= pos {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
