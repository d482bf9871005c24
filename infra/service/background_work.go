package service

import (
	"context"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/cluster"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// The background loops that must run on one process at a time, by lease name (infra/cluster),
// beside the projections, whose leases are their names.
const (
	leaseTimers      = "timers"
	leaseSweeper     = "idempotency-sweeper"
	leaseStatistics  = "statistics"
	leaseReplays     = "webhook-replays"
	alwaysDispatcher = "dispatcher" // any worker sends deliveries: no lease
)

// backgroundWork starts and stops what this process holds leases of: the projections (through
// the pipeline) and the loops that must run once.
type backgroundWork struct {
	a     *App
	mu    sync.Mutex
	loops map[string]*runningLoop
}

type runningLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// loops are the background loops that run under a lease.
func (a *App) loops() map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		leaseTimers:     a.timer.Run,
		leaseSweeper:    a.sweeper.Run,
		leaseStatistics: a.statistics.Run,
		leaseReplays:    a.replays.Run,
	}
}

// leased names every lease a worker of this service may hold: each relayed projection, then the
// loops.
func (a *App) leased() []string {
	names := a.pipeline.Names()
	loops := a.loops()
	for _, name := range []string{leaseTimers, leaseSweeper, leaseStatistics, leaseReplays} {
		if loops[name] != nil {
			names = append(names, name)
		}
	}
	return names
}

// hold runs what this process holds now and stops the rest (cluster.Hold): the pipeline's
// projections (on PostgreSQL; on SQLite the pipeline runs them all anyway) and the loops, each on
// a context of its own, stopped and waited for before hold returns.
func (w *backgroundWork) hold(ctx context.Context, held []string) {
	if w.a.db.Dialect == sqldb.Postgres {
		if err := w.a.pipeline.SetHeld(ctx, held); err != nil {
			w.a.log.Warn("cluster: change the projections this process runs", zap.Error(err))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, run := range w.a.loops() {
		l, running := w.loops[name]
		switch want := slices.Contains(held, name); {
		case want && !running:
			loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			l = &runningLoop{cancel: cancel, done: make(chan struct{})}
			w.loops[name] = l
			go func() {
				defer close(l.done)
				if err := run(loopCtx); err != nil {
					w.a.log.Error("background loop stopped", zap.String("loop", name), zap.Error(err))
				}
			}()
		case !want && running:
			l.cancel()
			<-l.done
			delete(w.loops, name)
		}
	}
}

// newNode places this process in the cluster.
func (a *App) newNode() *cluster.Node {
	w := &backgroundWork{a: a, loops: map[string]*runningLoop{}}
	return cluster.New(a.db, cluster.Config{
		Role: a.cfg.Role, Leased: a.leased(), Always: []string{alwaysDispatcher}, Awaited: a.pipeline.Names(),
		Hold: w.hold, Observer: a.metrics, Log: a.log.Named("cluster"),
	})
}
