package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/api/httpapi/limits"
)

// Observer is told when the limits stop and start being shared (metrics).
type Observer interface {
	// RedisUnreachable reports whether decisions are taken in this process because Redis does
	// not answer.
	RedisUnreachable(unreachable bool)
	// LocalDecision counts one decision taken in this process because Redis did not answer.
	LocalDecision()
}

// Fallback decides in Redis and, while Redis does not answer, in this process's memory: the
// service keeps answering, each process then enforcing the limits alone. A circuit breaker
// stops asking Redis after failures in a row and asks again every RetryAfter, so that a dead
// Redis costs neither a timeout per request nor a log line per request: one warning when the
// limits stop being shared, one line when they are shared again.
type Fallback struct {
	shared   *Redis
	local    *Memory
	breaker  *gobreaker.CircuitBreaker
	observer Observer
	lastErr  atomic.Pointer[error] // the last error of Redis, for the warning
}

// FallbackConfig tunes Fallback; zero values take the defaults.
type FallbackConfig struct {
	// FailuresToOpen is how many Redis calls in a row must fail before decisions go local
	// (default 3).
	FailuresToOpen uint32
	// RetryAfter is how long decisions stay local before Redis is asked again (default 2 s).
	RetryAfter time.Duration
}

// NewFallback returns a store that decides in shared and, while it fails, in local.
func NewFallback(shared *Redis, local *Memory, cfg FallbackConfig, observer Observer, log *zap.Logger) *Fallback {
	if cfg.FailuresToOpen == 0 {
		cfg.FailuresToOpen = 3
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 2 * time.Second
	}
	f := &Fallback{shared: shared, local: local, observer: observer}
	log = log.Named("ratelimit")
	f.breaker = gobreaker.NewCircuitBreaker(gobreaker.Settings{
		Name:        "redis",
		MaxRequests: 1, // while half-open, one decision tries Redis; the others stay local
		Timeout:     cfg.RetryAfter,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= cfg.FailuresToOpen },
		// A client that went away cancels its decision: that says nothing about Redis.
		IsSuccessful: func(err error) bool { return err == nil || errors.Is(err, context.Canceled) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			switch {
			case from == gobreaker.StateClosed && to == gobreaker.StateOpen:
				var err error
				if last := f.lastErr.Load(); last != nil {
					err = *last
				}
				log.Warn("Redis does not answer: each process enforces the rate limits alone until it does", zap.Error(err), zap.Duration("retryEvery", cfg.RetryAfter))
				observer.RedisUnreachable(true)
			case to == gobreaker.StateClosed:
				log.Info("Redis answers again: the rate limits are shared again")
				observer.RedisUnreachable(false)
			}
		},
	})
	observer.RedisUnreachable(false)
	return f
}

// Decide decides in Redis, or locally while Redis does not answer (limits.Limiter). It fails only when
// ctx ended.
func (f *Fallback) Decide(ctx context.Context, counts []limits.Count) (limits.Decision, error) {
	d, err := f.breaker.Execute(func() (any, error) {
		d, err := f.shared.Decide(ctx, counts)
		if err != nil && !errors.Is(err, context.Canceled) {
			f.lastErr.Store(&err)
		}
		return d, err
	})
	if err == nil {
		return d.(limits.Decision), nil
	}
	if ctx.Err() != nil {
		return limits.Decision{}, ctx.Err()
	}
	f.observer.LocalDecision()
	return f.local.Decide(ctx, counts)
}

// Release gives the slot back where it was counted (limits.Limiter).
func (f *Fallback) Release(ctx context.Context, slot limits.Slot) error {
	if slotOf(slot).shared {
		return f.shared.Release(ctx, slot)
	}
	return f.local.Release(ctx, slot)
}
