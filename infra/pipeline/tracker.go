package pipeline

import (
	"context"
	"sync"
)

// Tracker knows how far each read model (and cache invalidator) has applied the log in this
// process, so that a write handler can wait until the read models show its write (DESIGN.md
// invariant 6).
type Tracker struct {
	mu        sync.Mutex
	positions map[string]int64
	changed   chan struct{} // closed and replaced on every advance
}

func newTracker() *Tracker {
	return &Tracker{positions: map[string]int64{}, changed: make(chan struct{})}
}

func (t *Tracker) register(name string, pos int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.positions[name] = pos
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

// lowest returns the lowest position of them all, and a channel closed at the next advance.
func (t *Tracker) lowest() (int64, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lowest := int64(-1)
	for _, pos := range t.positions {
		if lowest < 0 || pos < lowest {
			lowest = pos
		}
	}
	return max(lowest, 0), t.changed
}

// WaitReadModels blocks until every read model has applied the log up to pos, or ctx ends.
func (t *Tracker) WaitReadModels(ctx context.Context, pos int64) error {
	for {
		have, changed := t.lowest()
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
