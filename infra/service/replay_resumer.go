package service

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// resumeReplaysEvery is how often the worker looks for webhook replays left unfinished.
const resumeReplaysEvery = 5 * time.Second

// replayResumer finishes the webhook replays a process left unfinished (it stopped between two
// batches), on the one worker that holds its lease (background_work.go). A replay whose recorder
// is alive is not touched: it holds a claim on the replay that every batch renews
// (webhooks/replays.go), so the claim, not the lease, keeps two recorders apart.
type replayResumer struct {
	replays interface {
		ResumeReplays(ctx context.Context) (int, error)
	}
	log *zap.Logger
}

// Run resumes at start and every resumeReplaysEvery until ctx ends. Errors are logged, never
// returned: the next look tries again.
func (r replayResumer) Run(ctx context.Context) error {
	for {
		n, err := r.replays.ResumeReplays(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("resume unfinished webhook replays", zap.Error(err))
		case n > 0:
			r.log.Info("resumed unfinished webhook replays", zap.Int("replays", n))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(resumeReplaysEvery):
		}
	}
}
