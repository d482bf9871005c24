package commands

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// RotateWebhookSecret gives a subscription a new signing secret; the previous one keeps signing
// too for 24 hours.
type RotateWebhookSecret struct {
	Meta           Meta
	SubscriptionID string
}

// RotateWebhookSecretResult carries the new secret: the only time it is shown.
type RotateWebhookSecretResult struct {
	Secret   string
	Position int64
}

// RotateWebhookSecretHandler handles RotateWebhookSecret.
type RotateWebhookSecretHandler = Handler[RotateWebhookSecret, RotateWebhookSecretResult]

// NewRotateWebhookSecretHandler returns the handler of RotateWebhookSecret, logged and measured.
func NewRotateWebhookSecretHandler(repo *Repository, log *zap.Logger, obs Observer) RotateWebhookSecretHandler {
	return decorate[RotateWebhookSecret, RotateWebhookSecretResult](rotateWebhookSecretHandler{repo: repo}, log, obs)
}

type rotateWebhookSecretHandler struct {
	repo *Repository
}

// Handle rotates the secret.
func (h rotateWebhookSecretHandler) Handle(ctx context.Context, cmd RotateWebhookSecret) (RotateWebhookSecretResult, error) {
	var res RotateWebhookSecretResult
	var err error
	res.Position, err = execute(ctx, h.repo, cmd.Meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		sub, err := loadSubscription(ctx, s, cmd.Meta.AccountID, cmd.SubscriptionID)
		if err != nil {
			return err
		}
		res.Secret, err = sub.RotateSecret(time.Now())
		return err
	})
	return res, err
}
