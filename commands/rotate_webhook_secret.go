package commands

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
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
// The new secret is sealed with sealer before the log keeps it.
func NewRotateWebhookSecretHandler(repo *Repository, sealer Sealer, log *zap.Logger, obs Observer) RotateWebhookSecretHandler {
	return decorate[RotateWebhookSecret, RotateWebhookSecretResult](rotateWebhookSecretHandler{repo: repo, sealer: sealer}, log, obs)
}

type rotateWebhookSecretHandler struct {
	repo   *Repository
	sealer Sealer
}

// Handle rotates the secret.
func (h rotateWebhookSecretHandler) Handle(ctx context.Context, cmd RotateWebhookSecret) (RotateWebhookSecretResult, error) {
	res := RotateWebhookSecretResult{Secret: domain.NewWebhookSecret()}
	sealed, err := h.sealer.Seal([]byte(res.Secret), domain.WebhookSecretSealing(cmd.SubscriptionID))
	if err != nil {
		return RotateWebhookSecretResult{}, fmt.Errorf("commands: seal the signing secret: %w", err)
	}
	res.Position, err = execute(ctx, h.repo, cmd.Meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		sub, err := loadSubscription(ctx, s, cmd.Meta.AccountID, cmd.SubscriptionID)
		if err != nil {
			return err
		}
		return sub.RotateSecret(time.Now(), sealed)
	})
	if err != nil {
		return RotateWebhookSecretResult{}, err
	}
	return res, nil
}
