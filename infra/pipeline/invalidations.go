package pipeline

import (
	"context"
	"sync"

	"github.com/funnelhq/funnel/domain"
)

// invalidations hands each relayed batch to the cache invalidators once every read model that
// shows the batch's events to them has applied it. Not before: a cache dropped while a read model
// had yet to commit the batch could be filled again from the rows as they were, and keep them
// until the next change. When this process runs those read models, they have applied the batch by
// the time the relay publishes the next one, and the batch is invalidated at once, on the relay's
// path; when another process runs one (several processes, infra/cluster), the batch waits here,
// in order, for its checkpoint, without holding the relay back.
type invalidations struct {
	mu      sync.Mutex
	pending []pendingInvalidation
	wake    chan struct{}
}

type pendingInvalidation struct {
	events  []domain.Recorded // of the types an invalidator reads
	types   []string
	through int64 // the batch's last position
}

// add queues a batch, or invalidates it at once when nothing is queued and the read models have
// applied it.
func (q *invalidations) add(p *Pipeline, batch []domain.Recorded) {
	if len(p.invalidators) == 0 {
		return
	}
	item := pendingInvalidation{through: batch[len(batch)-1].Position}
	for _, e := range batch {
		for _, inv := range p.invalidators {
			if reads := readsOf(inv); reads == nil || reads(e.Type) {
				item.events = append(item.events, e)
				item.types = append(item.types, e.Type)
				break
			}
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 && p.tracker.appliedBy(item.lastPosition(), item.types) {
		q.invalidate(p, item)
		return
	}
	q.pending = append(q.pending, item)
	if q.wake == nil {
		q.wake = make(chan struct{}, 1)
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (i pendingInvalidation) lastPosition() int64 {
	if len(i.events) == 0 {
		return 0
	}
	return i.events[len(i.events)-1].Position
}

func (q *invalidations) invalidate(p *Pipeline, item pendingInvalidation) {
	for _, inv := range p.invalidators {
		if len(item.events) > 0 {
			inv.Invalidate(item.events)
		}
		p.tracker.advance(inv.Name(), item.through)
	}
}

// run invalidates the queued batches in order, each once its read models have applied it, until
// ctx ends.
func (q *invalidations) run(ctx context.Context, p *Pipeline) {
	q.mu.Lock()
	if q.wake == nil {
		q.wake = make(chan struct{}, 1)
	}
	wake := q.wake
	q.mu.Unlock()
	for {
		q.mu.Lock()
		var item pendingInvalidation
		have := len(q.pending) > 0
		if have {
			item = q.pending[0]
		}
		q.mu.Unlock()
		if !have {
			select {
			case <-ctx.Done():
				return
			case <-wake:
				continue
			}
		}
		if err := p.tracker.waitApplied(ctx, item.lastPosition(), item.types); err != nil {
			return
		}
		q.mu.Lock()
		q.pending = q.pending[1:]
		q.invalidate(p, item)
		q.mu.Unlock()
	}
}
