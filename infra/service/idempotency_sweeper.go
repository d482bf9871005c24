package service

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/idempotency"
)

// sweepEvery is how often the Idempotency-Keys older than 24 hours are deleted. Claims ignore
// them already (and take their place); the sweep only bounds the table.
const sweepEvery = 10 * time.Minute

// idempotencySweeper deletes expired Idempotency-Keys, on the one worker that holds its lease
// (background_work.go); deleting a row twice would be harmless, so a lease that moves mid-sweep
// costs nothing.
type idempotencySweeper struct {
	keys *idempotency.Store
	log  *zap.Logger
}

// Run sweeps at start and every sweepEvery until ctx ends. Errors are logged, never returned:
// the next sweep tries again.
func (s idempotencySweeper) Run(ctx context.Context) error {
	for {
		n, err := s.keys.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("sweep expired idempotency keys", zap.Error(err))
		case n > 0:
			s.log.Debug("swept expired idempotency keys", zap.Int64("deleted", n))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(sweepEvery):
		}
	}
}
