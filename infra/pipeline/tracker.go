package pipeline

import (
	"context"
	"sync"
)

// Tracker knows how far each projection has applied the log in this process, so that a write
// handler can wait until the read models show its write (DESIGN.md invariant 6).
type Tracker struct {
	mu        sync.Mutex
	positions map[string]int64
	readModel map[string]bool // the projections GETs are served from
	changed   chan struct{}   // closed and replaced on every advance
}

func newTracker() *Tracker {
	return &Tracker{positions: map[string]int64{}, readModel: map[string]bool{}, changed: make(chan struct{})}
}

func (t *Tracker) register(name string, readModel bool, pos int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.positions[name] = pos
	t.readModel[name] = readModel
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

// min returns the lowest position among the projections selected by include.
func (t *Tracker) min(include func(name string) bool) (int64, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lowest := int64(-1)
	for name, pos := range t.positions {
		if include(name) && (lowest < 0 || pos < lowest) {
			lowest = pos
		}
	}
	return max(lowest, 0), t.changed
}

// ReadModelPosition is how far every read model has applied the log.
func (t *Tracker) ReadModelPosition() int64 {
	pos, _ := t.min(func(name string) bool { return t.readModel[name] })
	return pos
}

// Position returns how far one projection has applied the log.
func (t *Tracker) Position(name string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.positions[name]
}

// WaitReadModels blocks until every read model has applied the log up to pos, or ctx ends.
func (t *Tracker) WaitReadModels(ctx context.Context, pos int64) error {
	return t.wait(ctx, pos, func(name string) bool { return t.readModel[name] })
}

// WaitAll blocks until every projection, read model or not, has applied the log up to pos.
func (t *Tracker) WaitAll(ctx context.Context, pos int64) error {
	return t.wait(ctx, pos, func(string) bool { return true })
}

func (t *Tracker) wait(ctx context.Context, pos int64, include func(string) bool) error {
	for {
		have, changed := t.min(include)
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
