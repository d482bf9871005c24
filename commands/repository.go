package commands

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/domain"
)

// Repository is how commands reach their aggregates: it reads them from the event store, on top
// of the state it kept of them (stateCache), and queues the commands of one stream in this
// process (streamLocks). NewHandlers makes one for all the handlers of a process, so that they
// share both.
type Repository struct {
	store    EventStore
	locks    *streamLocks
	states   *stateCache
	existing existingStreams
}

// NewRepository returns the repository of one process over store, keeping up to cacheBytes of
// aggregate states (0 or less: DefaultStateCacheBytes).
func NewRepository(store EventStore, cacheBytes int) *Repository {
	if cacheBytes <= 0 {
		cacheBytes = DefaultStateCacheBytes
	}
	return &Repository{store: store, locks: newStreamLocks(), states: newStateCache(cacheBytes), existing: newExistingStreams()}
}

// read brings agg, an empty aggregate, up to date with its stream. A Restorable aggregate starts
// from the state kept of it, and only the events after that state's version are read and
// replayed: what another process appended meanwhile is among them; a Final one kept as final (a
// form that exists) is not read at all. It returns the stream version agg reflects and a log
// position a reader must reach to see it.
func (r *Repository) read(ctx context.Context, agg domain.Aggregate) (version, position int64, err error) {
	restorable, canRestore := agg.(domain.Restorable)
	if canRestore {
		var restored bool
		version, position, restored = r.states.restore(restorable)
		if final, ok := agg.(domain.Final); ok && restored && final.Final() {
			return version, position, nil // nothing can follow the kept state
		}
	}
	tail, err := r.store.ReadStreamFrom(ctx, agg.StreamID(), version)
	if err != nil {
		return 0, 0, err
	}
	for _, rec := range tail {
		if rec.Version != version+1 {
			return 0, 0, fmt.Errorf("commands: stream %s: version %d follows version %d", agg.StreamID(), rec.Version, version)
		}
		e, err := rec.Decode()
		if err != nil {
			return 0, 0, fmt.Errorf("commands: read %s: %w", agg.StreamID(), err)
		}
		agg.Replay(e)
		version, position = rec.Version, max(position, rec.Position)
	}
	if canRestore && len(tail) > 0 {
		r.states.keep(restorable, version, position)
	}
	return version, position, nil
}

// committed keeps the state of an aggregate whose changes were appended: it is at version now,
// and a reader sees it once it reaches position.
func (r *Repository) committed(agg domain.Aggregate, version, position int64) {
	if restorable, ok := agg.(domain.Restorable); ok {
		r.states.keep(restorable, version, position)
	}
}

// mayBeNew tells whether a command may take stream id for new without reading it: this process
// neither keeps a state of it nor found it existing when it last took it for new.
func (r *Repository) mayBeNew(agg domain.Aggregate) bool {
	return !r.keeps(agg) && !r.existing.has(agg.StreamID())
}

// keeps tells whether a state of agg's stream is kept, without reading it.
func (r *Repository) keeps(agg domain.Aggregate) bool {
	restorable, ok := agg.(domain.Restorable)
	return ok && r.states.has(restorable)
}
