package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// TimerActor is the actor of what the durable timers record: no request asked for it.
const TimerActor domain.Actor = "timer"

// EndSubscriptionIfDue ends a subscription cancelled at period end once that period is over
// (checkout.subscription_cancelled): the durable timer runs it when a timer falls due. It records
// nothing when the period is not over yet, or when the subscription already ended, so several
// processes may run it for one timer at once: the subscription stream's expected version lets
// one append, and the other decides again and finds nothing to do.
type EndSubscriptionIfDue struct {
	Meta           Meta
	SubscriptionID string
}

// EndSubscriptionIfDueResult tells whether this command ended the subscription, and where.
type EndSubscriptionIfDueResult struct {
	Ended    bool
	Position int64
}

// EndSubscriptionIfDueHandler handles EndSubscriptionIfDue.
type EndSubscriptionIfDueHandler = Handler[EndSubscriptionIfDue, EndSubscriptionIfDueResult]

// NewEndSubscriptionIfDueHandler returns the handler of EndSubscriptionIfDue, logged and measured.
func NewEndSubscriptionIfDueHandler(repo *Repository, now func() time.Time, log *zap.Logger, obs Observer) EndSubscriptionIfDueHandler {
	return decorate[EndSubscriptionIfDue, EndSubscriptionIfDueResult](endSubscriptionHandler{repo: repo, now: now}, log, obs)
}

type endSubscriptionHandler struct {
	repo *Repository
	now  func() time.Time
}

// Handle ends the subscription if its period is over.
func (h endSubscriptionHandler) Handle(ctx context.Context, cmd EndSubscriptionIfDue) (EndSubscriptionIfDueResult, error) {
	var res EndSubscriptionIfDueResult
	pos, err := execute(ctx, h.repo, cmd.Meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		sub, err := loadCheckoutSubscription(ctx, s, cmd.Meta.AccountID, cmd.SubscriptionID)
		if err != nil {
			return err
		}
		if err := seeLatestPayment(ctx, s, sub); err != nil {
			return err
		}
		// Each attempt says anew: one that lost the race decides again on the reloaded stream.
		res.Ended = sub.EndIfDue(h.now())
		return nil
	})
	if err != nil {
		return EndSubscriptionIfDueResult{}, err
	}
	res.Position = pos
	return res, nil
}
