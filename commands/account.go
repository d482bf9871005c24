package commands

import (
	"context"

	"funnel/domain"
)

// loadAccount loads an account that must exist.
func loadAccount(ctx context.Context, s *session, accountID string) (*domain.Account, error) {
	account := domain.AccountStream(accountID)
	if err := s.load(ctx, account); err != nil {
		return nil, err
	}
	if !account.Exists() {
		return nil, domain.NotFound("account not found")
	}
	return account, nil
}
