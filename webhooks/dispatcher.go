package webhooks

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// Observer is told about every attempt, every delivery given up unsent, and every delivery that
// failed unsent because a secret it carries could not be opened (metrics).
type Observer interface {
	DeliveryAttempted(outcome string, took time.Duration)
	DeliveryGivenUp()
	DeliveryNotOpened()
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

// Now reads the clock of the retry schedule (Config.Now), which claims are leased by: a manual
// retry (Deliveries.Retry) is stamped by it too.
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
// claimed until its attempt is recorded, so it cannot be sent twice meanwhile.
func (d *Dispatcher) Run(ctx context.Context) error {
	results := make(chan outcome, d.cfg.Concurrency)
	freed := make(chan struct{}, d.cfg.Concurrency)
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		d.recordResults(ctx, results)
	}()
	inflight := 0
	ticker := time.NewTicker(d.cfg.Poll)
	defer ticker.Stop()
	// retryTimer fires when the soonest retry this dispatcher scheduled is due; the ticker
	// catches the rest (retries scheduled by other processes, a delivery that was in flight).
	retryTimer := time.NewTimer(time.Hour)
	defer retryTimer.Stop()
	var retryAt time.Time // when retryTimer fires; zero once it has
	// Claim when something may have become due (a wake, a tick, a retry), or when half the
	// sends finished and the last claim took all it could (more may be due): claiming on every
	// finished send would cost a query per delivery, most finding nothing. New deliveries,
	// claims handed back, a finished delivery that held the next of its ordering key back, and
	// retries wake it; the ticker catches the rest.
	mayClaim, lastFull := true, false
	for {
		if free := d.cfg.Concurrency - inflight; mayClaim && free > 0 && ctx.Err() == nil {
			batch, err := d.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				d.log.Error("claim deliveries", zap.Error(err))
			}
			lastFull = len(batch) == free
			for _, c := range batch {
				inflight++
				go func() {
					results <- d.send(c)
					freed <- struct{}{}
				}()
			}
		}
		if ctx.Err() != nil && inflight == 0 {
			close(results)
			<-recorded
			return nil
		}
		mayClaim = false
		select {
		case <-freed:
			inflight--
			mayClaim = lastFull && inflight <= d.cfg.Concurrency/2
		case <-d.wake:
			mayClaim = true
		case <-ticker.C:
			mayClaim = true
		case <-retryTimer.C:
			mayClaim, retryAt = true, time.Time{}
		case <-ctx.Done():
		}
		// Only ever earlier: a later retry must not push back one the timer waits for.
		if due := d.takeSoonest(); !due.IsZero() && (retryAt.IsZero() || due.Before(retryAt)) {
			retryTimer.Reset(max(due.Sub(d.cfg.Now()), 0))
			retryAt = due
		}
	}
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
