package webhooks

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// Observer is told about every attempt, every delivery given up unsent, every delivery that
// failed unsent because a secret it carries could not be opened, and how many accounts are slow
// (sendSlots), at every claim (metrics).
type Observer interface {
	DeliveryAttempted(outcome string, took time.Duration)
	DeliveryGivenUp()
	DeliveryNotOpened()
	SlowAccounts(n int)
}

// Disabler disables a subscription whose target answered 410 Gone.
type Disabler func(ctx context.Context, accountID, subscriptionID, reason string) error

// Dispatcher sends due deliveries. Deliveries are claimed for a lease before they are sent, so
// two dispatchers (in one process or several) never send one delivery at the same time; a
// dispatcher that dies mid-send leaves its claims to expire, and the delivery is sent again
// later with the same ids and body.
type Dispatcher struct {
	db       *sqldb.DB
	cfg      Config
	opener   Opener
	client   *http.Client
	disable  Disabler
	observer Observer
	log      *zap.Logger
	wake     chan struct{}
	lease    time.Duration

	mu      sync.Mutex
	soonest time.Time // the soonest retry the recorder scheduled, for the retry timer
}

// NewDispatcher builds a dispatcher. Settings of cfg left zero take their defaults (Config).
// opener opens the bodies the projector stored sealed.
func NewDispatcher(db *sqldb.DB, cfg Config, opener Opener, disable Disabler, observer Observer, log *zap.Logger) *Dispatcher {
	cfg = cfg.withDefaults()
	return &Dispatcher{
		db:       db,
		cfg:      cfg,
		opener:   opener,
		client:   newClient(cfg),
		disable:  disable,
		observer: observer,
		log:      log.Named("webhooks"),
		wake:     make(chan struct{}, 1),
		// Longer than any attempt can take, so a claim never lapses mid-send; short, so the
		// deliveries a crashed dispatcher held are retried soon after.
		lease: cfg.Timeout + 5*time.Second,
	}
}

// Now reads the clock of the retry schedule (Config.Now), which says when deliveries are due: a
// manual retry (Deliveries.Retry) is stamped by it too. Claims are leased by the database's clock
// (claimWalk).
func (d *Dispatcher) Now() time.Time { return d.cfg.Now() }

// Wake makes the dispatcher look for due deliveries now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run sends deliveries until ctx ends, then waits for the ones in flight. Claiming and
// recording run apart: a slow record transaction never holds up the next claim. A delivery stays
// claimed until its attempt is recorded, so it cannot be sent twice meanwhile. The send slots are
// shared out so that slow receivers hold only a few (sendSlots).
func (d *Dispatcher) Run(ctx context.Context) error {
	slots := newSendSlots(d.cfg.Concurrency)
	results := make(chan outcome, d.cfg.Concurrency)
	// Each send reports at most twice (slow, then done): room for all of them, so that a send's
	// timer never waits on the loop.
	events := make(chan flightEvent, 2*(slots.size+slots.slowPool))
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		d.recordResults(ctx, results)
	}()
	ticker := time.NewTicker(d.cfg.Poll)
	defer ticker.Stop()
	// retryTimer fires when the soonest retry this dispatcher scheduled is due; the ticker
	// catches the rest (retries scheduled by other processes, a delivery that was in flight).
	retryTimer := time.NewTimer(time.Hour)
	defer retryTimer.Stop()
	var retryAt time.Time // when retryTimer fires; zero once it has
	// Claim when something may have become due (a wake, a tick, a retry), or when sends
	// reported (reported): claiming on every finished send would cost a query per delivery, most
	// finding nothing. New deliveries, claims handed back, a finished delivery that held the next
	// of its ordering key back, and retries wake it; the ticker catches the rest.
	mayClaim, lastFull := true, false
	// While an account is slow, each claim reads its due deliveries to pass them over: claims are
	// then paced, each waiting three times as long as that took (at most a poll), so that a slow
	// account's backlog costs the database at most a quarter of its time, however often
	// deliveries are added.
	pace := time.NewTimer(time.Hour)
	defer pace.Stop()
	var pacedUntil time.Time
	stopping := ctx.Done()
	for {
		if free := slots.free(); mayClaim && free > 0 && ctx.Err() == nil {
			if wait := time.Until(pacedUntil); wait > 0 {
				pace.Reset(wait)
			} else {
				batch, full, rest, err := d.claimFor(ctx, free, slots)
				if err != nil && ctx.Err() == nil {
					d.log.Error("claim deliveries", zap.Error(err))
				}
				lastFull, pacedUntil = full, time.Now().Add(rest)
				for _, c := range batch {
					d.start(slots.start(c), results, events)
				}
			}
		}
		if ctx.Err() != nil && slots.sending() == 0 {
			close(results)
			<-recorded
			return nil
		}
		mayClaim = false
		select {
		case e := <-events:
			mayClaim = d.reported(e, slots, lastFull)
		case <-d.wake:
			mayClaim = true
		case <-ticker.C:
			mayClaim = true
		case <-pace.C:
			mayClaim = true
		case <-retryTimer.C:
			mayClaim, retryAt = true, time.Time{}
		case <-stopping:
			stopping = nil // from now on the loop only waits for the sends under way to end
		}
		// Only ever earlier: a later retry must not push back one the timer waits for.
		if due := d.takeSoonest(); !due.IsZero() && (retryAt.IsZero() || due.Before(retryAt)) {
			retryTimer.Reset(max(due.Sub(d.cfg.Now()), 0))
			retryAt = due
		}
	}
}

// flightEvent is what a send tells the loop: that it has waited SlowAfter, or that it is done.
type flightEvent struct {
	flight *flight
	done   bool
}

// reported takes in what a send reported, and returns whether to claim again: when half the
// slots are free and the last claim took all it asked for, when a slow account's send ended and
// more of its deliveries may be due, or when a send turning slow gave its slot back.
func (d *Dispatcher) reported(e flightEvent, slots *sendSlots, lastFull bool) (claimAgain bool) {
	if e.done {
		moreDue := slots.finish(e.flight)
		return moreDue || lastFull && slots.regular <= d.cfg.Concurrency/2
	}
	freed, newly := slots.turnSlow(e.flight, time.Now())
	if newly {
		d.log.Info("an account's webhook receivers are slow: its deliveries are sent a few at a time",
			zap.String("account", e.flight.c.accountID), zap.String("subscription", e.flight.c.subscriptionID),
			zap.Duration("waited", d.cfg.SlowAfter), zap.Int("at_once", slots.accountShare), zap.Duration("for", slots.remember))
	}
	return freed
}

// claimFor claims up to free deliveries: oldest first, or shared out when some accounts are slow
// (sendSlots). It reports whether the claim took all it asked for of the accounts not slow, and
// how long the next claim should wait: while accounts are slow, three times as long as passing
// over their deliveries took, at most a poll, and not at all after an error (pacing, in Run).
func (d *Dispatcher) claimFor(ctx context.Context, free int, slots *sendSlots) (batch []claimed, full bool, rest time.Duration, err error) {
	slow := slots.slowAccounts(time.Now())
	d.observer.SlowAccounts(len(slow))
	if len(slow) > 0 {
		var passing time.Duration
		batch, full, passing, err = d.claimShared(ctx, free, slots, slow)
		if err != nil {
			return batch, full, 0, err
		}
		return batch, full, min(3*passing, d.cfg.Poll), nil
	}
	batch, err = d.claim(ctx, free)
	return batch, len(batch) == free, 0, err
}

// start sends a claimed delivery, reporting to the loop if it is still waiting after SlowAfter
// and when it is done.
func (d *Dispatcher) start(f *flight, results chan<- outcome, events chan<- flightEvent) {
	c := f.c
	go func() {
		slow := time.AfterFunc(d.cfg.SlowAfter, func() { events <- flightEvent{flight: f} })
		r := d.send(c)
		slow.Stop() // when it fired already, the loop finds the send done, or sees it before
		results <- r
		events <- flightEvent{flight: f, done: true}
	}()
}

// recordResults records attempts as they come, in batches, until results is closed. stop ends
// when the dispatcher stops (keepRecording).
func (d *Dispatcher) recordResults(stop context.Context, results <-chan outcome) {
	for r := range results {
		done := []outcome{r}
	drain:
		for {
			select {
			case r, ok := <-results:
				if !ok {
					break drain
				}
				done = append(done, r)
			default:
				break drain
			}
		}
		soonest, err := d.record(stop, done)
		if err != nil {
			// The claims lapse and the deliveries are sent again: never lost, maybe repeated.
			d.log.Error("record delivery attempts", zap.Error(err))
		}
		if !soonest.IsZero() {
			d.mu.Lock()
			if d.soonest.IsZero() || soonest.Before(d.soonest) {
				d.soonest = soonest
			}
			d.mu.Unlock()
			d.Wake()
		}
	}
}

// takeSoonest returns, and forgets, the soonest retry recorded since the last call.
func (d *Dispatcher) takeSoonest() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	due := d.soonest
	d.soonest = time.Time{}
	return due
}
