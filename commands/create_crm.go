package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateCRM defines a CRM pipeline with its stages, in order (operator API).
type CreateCRM struct {
	Meta       Meta
	Name       string
	StageNames []string
}

// CreateCRMResult names the new CRM.
type CreateCRMResult struct {
	CRMID    string
	Position int64
}

// CreateCRMHandler handles CreateCRM.
type CreateCRMHandler = Handler[CreateCRM, CreateCRMResult]

// NewCreateCRMHandler returns the handler of CreateCRM, logged and measured.
func NewCreateCRMHandler(repo *Repository, log *zap.Logger, obs Observer) CreateCRMHandler {
	return decorate[CreateCRM, CreateCRMResult](createCRMHandler{repo: repo}, log, obs)
}

type createCRMHandler struct {
	repo *Repository
}

// Handle creates the CRM.
func (h createCRMHandler) Handle(ctx context.Context, cmd CreateCRM) (CreateCRMResult, error) {
	id := domain.NewID(crmPrefix)
	pos, err := execute(ctx, h.repo, cmd.Meta, id, func(ctx context.Context, s *session) error {
		if _, err := loadAccount(ctx, s, cmd.Meta.AccountID); err != nil {
			return err
		}
		crm := domain.CRMStream(id)
		if err := s.track(crm); err != nil {
			return err
		}
		return crm.Create(cmd.Meta.AccountID, cmd.Name, cmd.StageNames, newIDs(stagePrefix))
	})
	if err != nil {
		return CreateCRMResult{}, err
	}
	return CreateCRMResult{CRMID: id, Position: pos}, nil
}
