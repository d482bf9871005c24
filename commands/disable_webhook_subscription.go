package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// DisableWebhookSubscription stops deliveries to a target that answered 410 Gone. The delivery
// workers issue it.
type DisableWebhookSubscription struct {
	AccountID      string
	SubscriptionID string
	Reason         string
}

// DisableWebhookSubscriptionHandler handles DisableWebhookSubscription.
type DisableWebhookSubscriptionHandler = Handler[DisableWebhookSubscription, int64]

// NewDisableWebhookSubscriptionHandler returns the handler of DisableWebhookSubscription, logged and measured.
func NewDisableWebhookSubscriptionHandler(repo *Repository, log *zap.Logger, obs Observer) DisableWebhookSubscriptionHandler {
	return decorate[DisableWebhookSubscription, int64](disableWebhookSubscriptionHandler{repo: repo}, log, obs)
}

type disableWebhookSubscriptionHandler struct {
	repo *Repository
}

// webhooksActor is the actor of what the delivery workers record.
const webhooksActor domain.Actor = "webhooks"

// Handle disables the subscription; one that is already disabled or deleted is left alone.
func (h disableWebhookSubscriptionHandler) Handle(ctx context.Context, cmd DisableWebhookSubscription) (int64, error) {
	meta := Meta{AccountID: cmd.AccountID, Actor: webhooksActor}
	return execute(ctx, h.repo, meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		sub, err := loadSubscription(ctx, s, cmd.AccountID, cmd.SubscriptionID)
		if domain.KindOf(err) == domain.KindNotFound {
			return nil // deleted meanwhile: nothing left to disable
		}
		if err != nil {
			return err
		}
		sub.Disable(cmd.Reason)
		return nil
	})
}
