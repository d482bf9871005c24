package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// DefineCustomField adds a custom field to an account's contacts.
type DefineCustomField struct {
	Meta Meta
	Name string
}

// DefineCustomFieldResult names the new field.
type DefineCustomFieldResult struct {
	FieldID  string
	Position int64
}

// DefineCustomFieldHandler handles DefineCustomField.
type DefineCustomFieldHandler = Handler[DefineCustomField, DefineCustomFieldResult]

// NewDefineCustomFieldHandler returns the handler of DefineCustomField, logged and measured.
func NewDefineCustomFieldHandler(repo *Repository, log *zap.Logger, obs Observer) DefineCustomFieldHandler {
	return decorate[DefineCustomField, DefineCustomFieldResult](defineCustomFieldHandler{repo: repo}, log, obs)
}

type defineCustomFieldHandler struct {
	repo *Repository
}

// Handle defines the field.
func (h defineCustomFieldHandler) Handle(ctx context.Context, cmd DefineCustomField) (DefineCustomFieldResult, error) {
	id := domain.NewID("cf")
	pos, err := execute(ctx, h.repo, cmd.Meta, cmd.Meta.AccountID, func(ctx context.Context, s *session) error {
		account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
		if err != nil {
			return err
		}
		return account.DefineCustomField(id, cmd.Name)
	})
	if err != nil {
		return DefineCustomFieldResult{}, err
	}
	return DefineCustomFieldResult{FieldID: id, Position: pos}, nil
}
