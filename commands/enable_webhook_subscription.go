package commands

import (
	"context"

	"go.uber.org/zap"
)

// EnableWebhookSubscription lets a disabled subscription receive deliveries again
// (POST /api/v1/webhooks/subscriptions/:id/enable). What it missed while disabled is not sent:
// a replay does that.
type EnableWebhookSubscription struct {
	Meta           Meta
	SubscriptionID string
}

// EnableWebhookSubscriptionHandler handles EnableWebhookSubscription.
type EnableWebhookSubscriptionHandler = Handler[EnableWebhookSubscription, int64]

// NewEnableWebhookSubscriptionHandler returns the handler of EnableWebhookSubscription, logged and measured.
func NewEnableWebhookSubscriptionHandler(repo *Repository, log *zap.Logger, obs Observer) EnableWebhookSubscriptionHandler {
	return decorate[EnableWebhookSubscription, int64](enableWebhookSubscriptionHandler{repo: repo}, log, obs)
}

type enableWebhookSubscriptionHandler struct {
	repo *Repository
}

// Handle enables the subscription; the position is where the change is visible (0 when it was
// active already).
func (h enableWebhookSubscriptionHandler) Handle(ctx context.Context, cmd EnableWebhookSubscription) (int64, error) {
	return execute(ctx, h.repo, cmd.Meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		sub, err := loadSubscription(ctx, s, cmd.Meta.AccountID, cmd.SubscriptionID)
		if err != nil {
			return err
		}
		return sub.Enable()
	})
}
