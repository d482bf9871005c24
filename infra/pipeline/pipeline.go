// Package pipeline carries committed events from the log to the projections through Watermill:
// a relay reads the log in position order and publishes batches; every projection is a Watermill
// handler that applies them exactly once (projector.go). In embedded mode the transport is
// Watermill's in-process GoChannel and the log itself is the durable record: a projection that
// falls behind, or starts from scratch, reads what it missed from the log.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

const (
	// relayBatch bounds the events one message carries.
	relayBatch = 500
	// pollInterval is how often the relay looks for events appended by other processes; appends
	// of this process wake it at once.
	pollInterval = 250 * time.Millisecond
)

// LogReader is the event log as the pipeline reads it.
type LogReader interface {
	// ReadLog returns up to limit events after a position, in position order, none while one
	// before it may still commit: a prefix of what is settled there.
	ReadLog(ctx context.Context, after int64, limit int) ([]domain.Recorded, error)
	// ReadSettled returns up to limit events in (after, upto], where a ReadLog has read through
	// upto: every position there is settled.
	ReadSettled(ctx context.Context, after, upto int64, limit int) ([]domain.Recorded, error)
	Head(ctx context.Context) (int64, error)
	Notify() (<-chan struct{}, func())
}

// Observer is told how projections keep up (metrics).
type Observer interface {
	Applied(projection string, position int64, lastOccurred time.Time)
	Relayed(position int64)
}

// Pipeline runs the relay and the projections.
type Pipeline struct {
	db           *sqldb.DB
	log          LogReader
	logger       *zap.Logger
	observer     Observer
	tracker      *Tracker
	projectors   []*projector
	invalidators []Invalidator
	ready        chan struct{}
	pubsub       *gochannel.GoChannel
	// shared: one of several processes on the database (Share); held names the projections
	// this process runs then (nil: all of them).
	shared       bool
	held         map[string]bool
	heldMu       sync.Mutex
	holdRequests chan holdRequest
	stopped      chan struct{}
	poll         time.Duration // how often the relay looks for other processes' appends
	saveEvery    time.Duration
	// relayed is how far the relay has read the log: where it starts again after a change of
	// what this process holds (the invalidators have seen the log up to there).
	relayed       atomic.Int64
	invalidations invalidations
	// decoded holds the batches this process's relay is publishing, by message id: a message
	// carries only the range of the log it stands for (logRange), and a handler of this process
	// takes the events the relay read, in memory. A message from elsewhere (a redelivery,
	// another transport) is read from the log.
	decoded sync.Map
}

// New prepares a pipeline; add projections, then Run it.
func New(db *sqldb.DB, log LogReader, logger *zap.Logger, observer Observer) *Pipeline {
	logger = logger.Named("pipeline")
	return &Pipeline{
		db: db, log: log, logger: logger, observer: observer, tracker: newTracker(), ready: make(chan struct{}),
		holdRequests: make(chan holdRequest), stopped: make(chan struct{}), poll: pollInterval, saveEvery: saveEvery,
		pubsub: gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, zapAdapter{log: logger}),
	}
}

// AddReadModel adds a projection that GETs are served from: writes wait for it (read your writes).
func (p *Pipeline) AddReadModel(pr Projection) {
	p.projectors = append(p.projectors, &projector{projection: pr, db: p.db, log: p.log, tracker: p.tracker, observer: p.observer})
}

// Invalidator keeps in-memory caches right. It has no checkpoint: it starts empty and sees
// every batch this process relays, whoever appended the events, once every read model has
// applied the batch.
type Invalidator interface {
	Name() string
	Invalidate(batch []domain.Recorded)
}

// AddInvalidator adds a cache invalidator; writes wait for it like for a read model, so that a
// write's effect on a cache is visible to the next request.
func (p *Pipeline) AddInvalidator(inv Invalidator) { p.invalidators = append(p.invalidators, inv) }

// Reader is a projection or an invalidator of which requests see only the effect of some event
// types: a write of other types need not wait for it (Tracker.WaitWrite). The webhook projector
// shows its subscriptions to requests, not the deliveries other events make; the tag cache
// changes with new tags only. One that is no Reader shows what it Handles; an invalidator that
// is none, everything.
type Reader interface {
	Reads(eventType string) bool
}

func readsOf(x any) func(string) bool {
	if r, ok := x.(Reader); ok {
		return r.Reads
	}
	if p, ok := x.(Projection); ok {
		return p.Handles
	}
	return nil
}

// Tracker tells how far the projections are.
func (p *Pipeline) Tracker() *Tracker { return p.tracker }

// Ready is closed once every projection has caught up with the log as it was at start.
func (p *Pipeline) Ready() <-chan struct{} { return p.ready }

// Run runs until ctx ends: the relay and the projections this process holds (all of them unless
// Share made it one of several processes), restarted from their checkpoints whenever SetHeld
// changes what it holds.
func (p *Pipeline) Run(ctx context.Context) error {
	defer close(p.stopped)
	for _, pr := range p.projectors {
		p.tracker.registerRemote(pr.projection.Name(), readsOf(pr.projection))
		if !p.holds(pr.projection.Name()) {
			continue
		}
		pos, err := pr.checkpoint(ctx)
		if err != nil {
			return err
		}
		p.tracker.hold(pr.projection.Name(), pos)
	}
	head, err := p.log.Head(ctx)
	if err != nil {
		return err
	}
	for _, inv := range p.invalidators {
		p.tracker.register(inv.Name(), head, readsOf(inv)) // empty caches hold nothing older
	}
	p.relayed.Store(head)
	// Ready once the read models have every event committed at start: on PostgreSQL the head
	// (below the readers' horizon) may lag the end of the log while a transaction is open.
	end, err := p.db.LogEnd(ctx)
	if err != nil {
		return err
	}
	go p.signalReady(ctx, max(head, end))
	go p.saveCheckpoints(ctx)
	go p.invalidations.run(ctx, p)
	if p.shared {
		go p.tracker.pollRemote(ctx, p.loadCheckpoints)
	}
	for {
		held := p.heldProjectors()
		runCtx, cancel := context.WithCancelCause(ctx)
		done := make(chan error, 1)
		go func() { done <- p.runHeld(runCtx, held) }()
		select {
		case err := <-done:
			cancel(nil)
			if ctx.Err() != nil {
				return nil
			}
			if !p.shared {
				return err
			}
			// Shared: what this process holds changes while it runs (a takeover), and a start
			// that fails (the database away for a moment) is tried again rather than ending the
			// process; its leases stay held, and the work goes on from the checkpoints.
			p.logger.Error("pipeline: the relay stopped; starting it again", zap.Error(err))
			// Nothing runs meanwhile: a change of what it holds is taken at once (a worker that
			// lost its leases stops them before they expire, pipeline.SetHeld).
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			case req := <-p.holdRequests:
				p.setHeld(req.names)
				close(req.done)
			}
		case <-ctx.Done():
			cancel(nil)
			<-done
			return nil
		case req := <-p.holdRequests:
			cancel(heldChange{saveBy: req.saveBy})
			err := <-done
			p.setHeld(req.names)
			close(req.done)
			if err != nil && ctx.Err() == nil {
				p.logger.Error("pipeline: the relay stopped before a change of what this process holds", zap.Error(err))
			}
		}
	}
}

// heldChange ends a run of the held projectors for a change of what this process holds
// (SetHeld): their checkpoints are saved by saveBy, if set.
type heldChange struct{ saveBy time.Time }

func (heldChange) Error() string { return "pipeline: what this process holds changes" }

// runHeld runs the relay and the given projectors, from their checkpoints, until ctx ends; then
// it saves their checkpoints (by the time SetHeld gave, if it ended for SetHeld) and hands them
// back to the tracker as run elsewhere.
func (p *Pipeline) runHeld(ctx context.Context, held []*projector) error {
	from := p.relayed.Load()
	defer func() {
		saveCtx := context.Background()
		var change heldChange
		if errors.As(context.Cause(ctx), &change) && !change.saveBy.IsZero() {
			var cancel context.CancelFunc
			saveCtx, cancel = context.WithDeadline(saveCtx, change.saveBy)
			defer cancel()
		}
		p.saveAll(saveCtx, held)
		for _, pr := range held {
			pr.active.Store(false)
			if p.shared {
				p.tracker.release(pr.projection.Name())
			}
		}
	}()
	for _, pr := range held {
		pos, err := pr.checkpoint(ctx)
		if err != nil {
			return err
		}
		p.tracker.hold(pr.projection.Name(), pos)
		pr.active.Store(true)
		from = min(from, pos)
	}

	if len(held) == 0 {
		// No projection here (an api process, or a worker that holds none now): the relay
		// feeds the cache invalidators only. A Watermill router with no handler never stops.
		return p.relay(ctx, nil, from, nil)
	}
	wmLogger := zapAdapter{log: p.logger}
	pubsub := p.pubsub
	defer func() {
		_ = pubsub.Close()
		p.pubsub = gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, wmLogger)
	}()
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, wmLogger)
	if err != nil {
		return fmt.Errorf("pipeline: router: %w", err)
	}
	router.AddMiddleware(
		middleware.Recoverer,
		// A failing batch (the database is down) is retried with backoff, then redelivered:
		// a projection never skips ahead.
		middleware.Retry{MaxRetries: 8, InitialInterval: 50 * time.Millisecond, MaxInterval: 5 * time.Second, Multiplier: 2, Logger: wmLogger}.Middleware,
	)
	for _, pr := range held {
		router.AddConsumerHandler(pr.projection.Name(), topicOf(pr), pubsub, func(msg *message.Message) error {
			batch, after, err := p.batchOf(msg.Context(), msg)
			if err != nil {
				return err
			}
			return pr.apply(msg.Context(), after, batch)
		})
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	routerDone := make(chan error, 1)
	go func() { routerDone <- router.Run(ctx) }()
	select {
	case <-router.Running():
	case err := <-routerDone:
		return fmt.Errorf("pipeline: router stopped at start: %w", err)
	}
	err = p.relay(ctx, pubsub, from, held)
	cancel()
	<-routerDone
	return err
}

// heldProjectors are the projectors this process runs now.
func (p *Pipeline) heldProjectors() []*projector {
	var out []*projector
	for _, pr := range p.projectors {
		if p.holds(pr.projection.Name()) {
			out = append(out, pr)
		}
	}
	return out
}

// saveEvery is how often the checkpoints of projections that had nothing to apply are written:
// a restart then rereads at most that much of the log for them.
const saveEvery = 5 * time.Second

// saveCheckpoints writes, every saveEvery until ctx ends, the positions projections reached
// through batches they had nothing to do with.
func (p *Pipeline) saveCheckpoints(ctx context.Context) {
	ticker := time.NewTicker(p.saveEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			p.saveAll(ctx, p.projectors)
		}
	}
}

// saveAll writes every projection's position once; at a clean stop, so that `funnel projections
// list` shows each where it is.
func (p *Pipeline) saveAll(ctx context.Context, projectors []*projector) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, pr := range projectors {
		if !pr.active.Load() {
			continue // run by another process, or not yet
		}
		if err := pr.saveCheckpoint(ctx); err != nil && ctx.Err() == nil {
			p.logger.Warn("save checkpoint", zap.String("projection", pr.projection.Name()), zap.Error(err))
		}
	}
}

func (p *Pipeline) signalReady(ctx context.Context, head int64) {
	if err := p.tracker.WaitReadModels(ctx, head); err == nil {
		p.logger.Info("projections caught up", zap.Int64("position", head))
		close(p.ready)
	}
}

// topicOf is the Watermill topic of one projection: the relay publishes a batch only to the
// projections that handle an event of it (see relay).
func topicOf(pr *projector) string { return "projection." + pr.projection.Name() }

// logRange is what a message carries: the positions after and through which it stands for the
// log. The events themselves stay in memory (Pipeline.decoded) or in the log: encoding every
// batch to JSON cost the relay more than reading it.
type logRange struct {
	After   int64 `json:"after"`
	Through int64 `json:"through"`
}

// batchOf returns the events a message stands for, the relay's own batch or what the log holds in
// its range, and the position its range starts after.
func (p *Pipeline) batchOf(ctx context.Context, msg *message.Message) ([]domain.Recorded, int64, error) {
	var r logRange
	if err := json.Unmarshal(msg.Payload, &r); err != nil {
		return nil, 0, fmt.Errorf("pipeline: decode batch range: %w", err)
	}
	if batch, ok := p.decoded.Load(msg.UUID); ok {
		return batch.([]domain.Recorded), r.After, nil
	}
	var batch []domain.Recorded
	for after := r.After; after < r.Through; {
		events, err := p.log.ReadSettled(ctx, after, r.Through, int(min(r.Through-after, relayBatch)))
		if err != nil {
			return nil, 0, fmt.Errorf("pipeline: read batch %d..%d: %w", r.After, r.Through, err)
		}
		if len(events) == 0 {
			break
		}
		batch = append(batch, events...)
		after = events[len(events)-1].Position
	}
	return batch, r.After, nil
}

// relay publishes the log from a position on, in order, until ctx ends.
func (p *Pipeline) relay(ctx context.Context, pub message.Publisher, from int64, running []*projector) error {
	wake, stop := p.log.Notify()
	defer stop()
	ticker := time.NewTicker(p.poll)
	defer ticker.Stop()
	pos := from
	var held heldBack
	for {
		// A commit signalled before this read is in it: drop the signal, so that only commits
		// after the read wake the relay, and a batch shorter than relayBatch, the head as it was,
		// is not followed by a read that finds nothing.
		select {
		case <-wake:
		default:
		}
		events, err := p.log.ReadLog(ctx, pos, relayBatch)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.logger.Error("relay: read log", zap.Error(err))
			events = nil
		}
		if len(events) > 0 {
			if err := p.publish(pub, pos, events, running); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			pos = events[len(events)-1].Position
			p.invalidations.add(p, events)
			p.relayed.Store(max(p.relayed.Load(), pos))
			p.observer.Relayed(pos)
			if len(events) == relayBatch {
				continue // more may be waiting already
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-ticker.C:
		case <-p.soonIfBehind(pos, held.since):
		}
		held.note(p, pos)
	}
}

// heldBack warns when the relay stays behind its own process's commits: on PostgreSQL readers
// read only below the oldest transaction of the database still running (or prepared, in any
// database), and one left open (a stuck session, a long manual transaction) holds every reader of
// the log back.
type heldBack struct {
	since  time.Time
	warned bool
}

// heldBackWarning is how long the relay stays behind its process's commits before it says so.
const heldBackWarning = 10 * time.Second

func (h *heldBack) note(p *Pipeline, pos int64) {
	c, ok := p.log.(interface{ LastCommitted() int64 })
	switch {
	case !ok || pos >= c.LastCommitted():
		if h.warned {
			p.logger.Info("relay: the log's readers go on", zap.Int64("position", pos))
		}
		*h = heldBack{}
	case h.since.IsZero():
		h.since = time.Now()
	case !h.warned && time.Since(h.since) > heldBackWarning:
		h.warned = true
		p.logger.Warn("relay: held back by a transaction still open in this database: events committed after it began are relayed once it ends (pg_stat_activity shows it: the oldest backend_xid where datname is this database; or pg_prepared_xacts)",
			zap.Int64("position", pos), zap.Int64("committed", c.LastCommitted()), zap.Duration("for", time.Since(h.since)))
	}
}

// behindPoll is how soon the relay reads again while this process has committed past what it
// read: the commits it has not seen wait for transactions that began before them to end (on
// PostgreSQL a reader reads below the oldest transaction still running), which takes about as
// long as a commit, and ends with no signal when that transaction was no append of this process.
const behindPoll = time.Millisecond

// heldPoll is how often the relay reads again once it has been behind its process's commits
// for longer than a commit takes (heldAfter): a transaction left open holds it back, and reading
// every millisecond until it ends would only load the database.
const heldPoll, heldAfter = 25 * time.Millisecond, 100 * time.Millisecond

// soonIfBehind returns a channel that fires after behindPoll (heldPoll once behind since longer
// than heldAfter) when this process's store has committed past pos, and nil (never) otherwise.
func (p *Pipeline) soonIfBehind(pos int64, behindSince time.Time) <-chan time.Time {
	c, ok := p.log.(interface{ LastCommitted() int64 })
	switch {
	case !ok || pos >= c.LastCommitted():
		return nil
	case !behindSince.IsZero() && time.Since(behindSince) > heldAfter:
		return time.After(heldPoll)
	}
	return time.After(behindPoll)
}

// publish hands a batch to the projections, and returns once every one of them has applied it.
// A projection with nothing to do in the batch is moved past it here (projector.skip), without
// a message: a batch used to wake about ten handlers that each found nothing to do. The others
// get it on their own topics at once, and apply it in parallel as before.
func (p *Pipeline) publish(pub message.Publisher, after int64, events []domain.Recorded, held []*projector) error {
	payload, err := json.Marshal(logRange{After: after, Through: events[len(events)-1].Position})
	if err != nil {
		return fmt.Errorf("pipeline: encode batch range: %w", err)
	}
	msg := message.NewMessage(watermill.NewUUID(), payload)
	p.decoded.Store(msg.UUID, events)
	defer p.decoded.Delete(msg.UUID)
	var topics []string
	for _, pr := range held {
		if !pr.skip(after, events) {
			topics = append(topics, topicOf(pr))
		}
	}
	errs := make(chan error, len(topics))
	for _, topic := range topics {
		go func() { errs <- pub.Publish(topic, msg.Copy()) }() // returns once its handler applied it
	}
	var first error
	for range topics {
		if err := <-errs; err != nil && first == nil {
			first = fmt.Errorf("pipeline: publish: %w", err)
		}
	}
	return first
}
