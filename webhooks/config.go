package webhooks

import "time"

// Config tunes delivery. A setting left zero (or negative) takes its default, in one place
// (withDefaults), so that a Config with only a Policy delivers as the service does rather than
// sending nothing:
//
//   - Timeout: an answer must come within it; 10 s.
//   - Concurrency: deliveries in flight at once, per process; 64.
//   - Poll: how often due retries (of other processes too) are looked for; 250 ms.
//   - SlowAfter: a send still waiting for its answer after this long is slow, and its account's
//     deliveries are then sent a few at a time (sendSlots); 2 s, or half of Timeout when that is
//     shorter.
//   - Schedule.Base and Schedule.Cap: the retry backoff; 60 s and 24 h, as
//     FUNNEL_WEBHOOK_BACKOFF_BASE and FUNNEL_WEBHOOK_BACKOFF_CAP default to.
//   - Now: the clock of the retry schedule (when an attempt was made, when the next one is due,
//     how long a claim holds); time.Now. Tests move it forward to let a retry fall due without
//     waiting for it. It must not run behind time.Now: new deliveries are stamped with
//     time.Now, and would wait until the clock reached that. Manual retries
//     (Deliveries.Retry) are stamped with this clock.
//
// How many attempts a delivery gets is recorded with it (NewProjector's maxAttempts).
type Config struct {
	Schedule    Schedule
	Policy      TargetPolicy
	Timeout     time.Duration
	Concurrency int
	Poll        time.Duration
	SlowAfter   time.Duration
	Now         func() time.Time
}

// The defaults of Config (see its doc comment).
const (
	defaultTimeout     = 10 * time.Second
	defaultConcurrency = 64
	defaultPoll        = 250 * time.Millisecond
	defaultSlowAfter   = 2 * time.Second
)

// The default retry schedule, which FUNNEL_WEBHOOK_BACKOFF_BASE and _CAP also default to.
const (
	DefaultBackoffBase = 60 * time.Second
	DefaultBackoffCap  = 24 * time.Hour
)

// withDefaults returns the config with every setting left zero set to its default.
func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = defaultTimeout
	}
	if c.Concurrency <= 0 {
		c.Concurrency = defaultConcurrency
	}
	if c.Poll <= 0 {
		c.Poll = defaultPoll
	}
	if c.SlowAfter <= 0 {
		c.SlowAfter = min(defaultSlowAfter, c.Timeout/2)
	}
	if c.Schedule.Base <= 0 {
		c.Schedule.Base = DefaultBackoffBase
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Schedule.Cap <= 0 {
		c.Schedule.Cap = DefaultBackoffCap
	}
	return c
}
