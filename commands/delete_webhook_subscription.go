package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// DeleteWebhookSubscription ends a subscription; its pending deliveries are given up.
type DeleteWebhookSubscription struct {
	Meta           Meta
	SubscriptionID string
	RESTHookOnly   bool // the REST Hook API: other kinds are configured in the app, and not found
}

// DeleteWebhookSubscriptionHandler handles DeleteWebhookSubscription.
type DeleteWebhookSubscriptionHandler = Handler[DeleteWebhookSubscription, int64]

// NewDeleteWebhookSubscriptionHandler returns the handler of DeleteWebhookSubscription, logged and measured.
func NewDeleteWebhookSubscriptionHandler(repo *Repository, log *zap.Logger, obs Observer) DeleteWebhookSubscriptionHandler {
	return decorate[DeleteWebhookSubscription, int64](deleteWebhookSubscriptionHandler{repo: repo}, log, obs)
}

type deleteWebhookSubscriptionHandler struct {
	repo *Repository
}

// Handle deletes the subscription; the position is where the deletion is visible.
func (h deleteWebhookSubscriptionHandler) Handle(ctx context.Context, cmd DeleteWebhookSubscription) (int64, error) {
	return execute(ctx, h.repo, cmd.Meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		sub, err := loadSubscription(ctx, s, cmd.Meta.AccountID, cmd.SubscriptionID)
		if err != nil {
			return err
		}
		if cmd.RESTHookOnly {
			return sub.DeleteRESTHook()
		}
		return sub.Delete()
	})
}

// loadSubscription loads a subscription of the account: another account's is Forbidden, an
// unknown or deleted one NotFound.
func loadSubscription(ctx context.Context, s *session, accountID, id string) (*domain.WebhookSubscription, error) {
	sub := domain.WebhookSubscriptionStream(id)
	if err := s.load(ctx, sub); err != nil {
		return nil, err
	}
	switch {
	case !sub.Exists():
		return nil, domain.NotFound("webhook subscription not found")
	case sub.AccountID() != accountID:
		return nil, domain.Forbidden("webhook subscription belongs to another account")
	}
	return sub, nil
}
