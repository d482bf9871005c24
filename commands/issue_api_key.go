package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// IssueAPIKey creates an API key for an account.
type IssueAPIKey struct {
	Meta   Meta
	Name   string
	Scopes []string // nil means every scope; an empty list is refused
}

// IssueAPIKeyResult carries the secret: the only time it is ever shown.
type IssueAPIKeyResult struct {
	KeyID    string
	Secret   string
	Scopes   []domain.Scope
	Position int64
}

// IssueAPIKeyHandler handles IssueAPIKey.
type IssueAPIKeyHandler = Handler[IssueAPIKey, IssueAPIKeyResult]

// NewIssueAPIKeyHandler returns the handler of IssueAPIKey, logged and measured.
func NewIssueAPIKeyHandler(repo *Repository, log *zap.Logger, obs Observer) IssueAPIKeyHandler {
	return decorate[IssueAPIKey, IssueAPIKeyResult](issueAPIKeyHandler{repo: repo}, log, obs)
}

type issueAPIKeyHandler struct {
	repo *Repository
}

// Handle issues the key.
func (h issueAPIKeyHandler) Handle(ctx context.Context, cmd IssueAPIKey) (IssueAPIKeyResult, error) {
	scopes, err := domain.ParseScopes(cmd.Scopes)
	if err != nil {
		return IssueAPIKeyResult{}, err
	}
	keyID := domain.NewID("key")
	secret, hash := domain.NewAPIKeySecret()
	pos, err := execute(ctx, h.repo, cmd.Meta, cmd.Meta.AccountID, func(ctx context.Context, s *session) error {
		account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
		if err != nil {
			return err
		}
		return account.IssueAPIKey(keyID, cmd.Name, scopes, hash)
	})
	if err != nil {
		return IssueAPIKeyResult{}, err
	}
	return IssueAPIKeyResult{KeyID: keyID, Secret: secret, Scopes: scopes, Position: pos}, nil
}
