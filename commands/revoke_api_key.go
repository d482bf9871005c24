package commands

import (
	"context"

	"go.uber.org/zap"
)

// RevokeAPIKey stops a key from authenticating.
type RevokeAPIKey struct {
	Meta  Meta
	KeyID string
}

// RevokeAPIKeyHandler handles RevokeAPIKey.
type RevokeAPIKeyHandler = Handler[RevokeAPIKey, int64]

// NewRevokeAPIKeyHandler returns the handler of RevokeAPIKey, logged and measured.
func NewRevokeAPIKeyHandler(repo *Repository, log *zap.Logger, obs Observer) RevokeAPIKeyHandler {
	return decorate[RevokeAPIKey, int64](revokeAPIKeyHandler{repo: repo}, log, obs)
}

type revokeAPIKeyHandler struct {
	repo *Repository
}

// Handle revokes the key; the position is where the revocation is visible.
func (h revokeAPIKeyHandler) Handle(ctx context.Context, cmd RevokeAPIKey) (int64, error) {
	return execute(ctx, h.repo, cmd.Meta, cmd.Meta.AccountID, func(ctx context.Context, s *session) error {
		account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
		if err != nil {
			return err
		}
		return account.RevokeAPIKey(cmd.KeyID)
	})
}
