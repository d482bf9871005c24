package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateAccount opens a tenant.
type CreateAccount struct {
	RequestID string
	Name      string
}

// CreateAccountResult names the new account and the position to wait for.
type CreateAccountResult struct {
	AccountID string
	Position  int64
}

// CreateAccountHandler handles CreateAccount.
type CreateAccountHandler = Handler[CreateAccount, CreateAccountResult]

// NewCreateAccountHandler returns the handler of CreateAccount, logged and measured.
func NewCreateAccountHandler(repo *Repository, log *zap.Logger, obs Observer) CreateAccountHandler {
	return decorate[CreateAccount, CreateAccountResult](createAccountHandler{repo: repo}, log, obs)
}

type createAccountHandler struct {
	repo *Repository
}

// Handle creates the account.
func (h createAccountHandler) Handle(ctx context.Context, cmd CreateAccount) (CreateAccountResult, error) {
	id := domain.NewID("acc")
	meta := Meta{AccountID: id, Actor: domain.OperatorActor, RequestID: cmd.RequestID}
	pos, err := execute(ctx, h.repo, meta, id, func(ctx context.Context, s *session) error {
		account := domain.AccountStream(id)
		if err := s.load(ctx, account); err != nil {
			return err
		}
		return account.Create(cmd.Name)
	})
	if err != nil {
		return CreateAccountResult{}, err
	}
	return CreateAccountResult{AccountID: id, Position: pos}, nil
}
