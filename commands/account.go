package commands

import (
	"context"

	"github.com/funnelhq/funnel/domain"
)

// loadAccount loads an account that must exist. Asking again in the same session returns the
// same aggregate.
func loadAccount(ctx context.Context, s *session, accountID string) (*domain.Account, error) {
	account, err := loadOnce(ctx, s, accountID, domain.AccountStream)
	if err != nil {
		return nil, err
	}
	if !account.Exists() {
		return nil, domain.NotFound("account not found")
	}
	return account, nil
}
