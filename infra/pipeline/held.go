package pipeline

import (
	"context"
	"fmt"
	"time"
)

// Several processes on one PostgreSQL database share the projections: each runs those it holds a
// lease of (infra/cluster), and reads how far the others are from their checkpoints.

// sharedPoll is how often the relay of a process that shares the database looks for appends of
// the other processes: an API process appends what a worker projects, and a write waits for it.
const sharedPoll = 25 * time.Millisecond

// sharedSaveEvery is how often a process that shares the database writes the checkpoints of the
// projections it runs that had nothing to apply: the other processes read how far those are
// from their checkpoints.
const sharedSaveEvery = 250 * time.Millisecond

// Share makes the pipeline one of several on the database, before Run: it runs only the
// projections SetHeld gives it (none at first), and a write waits for the others' checkpoints.
func (p *Pipeline) Share() {
	p.shared = true
	p.held = map[string]bool{}
	p.poll = sharedPoll
	p.saveEvery = sharedSaveEvery
}

// Names are the names of every relayed projection, the leases a shared pipeline may hold.
func (p *Pipeline) Names() []string {
	var out []string
	for _, pr := range p.projectors {
		out = append(out, pr.projection.Name())
	}
	return out
}

type holdRequest struct {
	names  []string
	saveBy time.Time // zero: no deadline
	done   chan struct{}
}

// SetHeld changes what a shared pipeline runs to the named projections (others are ignored),
// and returns once the projections it no longer holds have stopped and saved their checkpoints,
// and the others run again from theirs: only then may another process take them.
//
// The change is made whatever ctx says: a worker whose leases are about to expire must stop
// their work even if it is late. ctx's deadline, if any, bounds only the saving of the
// checkpoints, which a database that does not answer would hold up (infra/cluster stops the
// work of a lease it could not renew before the lease expires, and a checkpoint not saved only
// means that its next holder reads again what it had nothing to do with).
func (p *Pipeline) SetHeld(ctx context.Context, names []string) error {
	req := holdRequest{names: names, done: make(chan struct{})}
	req.saveBy, _ = ctx.Deadline()
	select {
	case p.holdRequests <- req:
	case <-p.stopped:
		p.setHeld(names) // not running: nothing runs, nothing to stop
		return nil
	}
	select {
	case <-req.done:
		return nil
	case <-p.stopped:
		return nil
	}
}

func (p *Pipeline) setHeld(names []string) {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	p.held = map[string]bool{}
	for _, n := range names {
		p.held[n] = true
	}
}

func (p *Pipeline) holds(name string) bool {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	return p.held == nil || p.held[name]
}

// loadCheckpoints reads every projection's checkpoint: how far the projections other processes
// run are.
func (p *Pipeline) loadCheckpoints(ctx context.Context) (map[string]int64, error) {
	rows, err := p.db.Read.QueryContext(ctx, `SELECT name, position FROM projection_checkpoints`)
	if err != nil {
		return nil, fmt.Errorf("pipeline: read checkpoints: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var pos int64
		if err := rows.Scan(&name, &pos); err != nil {
			return nil, fmt.Errorf("pipeline: read checkpoints: %w", err)
		}
		out[name] = pos
	}
	return out, rows.Err()
}
