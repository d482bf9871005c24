package commands

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateTag defines a tag and the automations it runs when applied.
type CreateTag struct {
	Meta        Meta
	Name        string
	Order       int
	Automations []domain.Automation
}

// CreateTagResult names the new tag.
type CreateTagResult struct {
	TagID    string
	Position int64
}

// CreateTagHandler handles CreateTag.
type CreateTagHandler = Handler[CreateTag, CreateTagResult]

// NewCreateTagHandler returns the handler of CreateTag, logged and measured.
func NewCreateTagHandler(repo *Repository, log *zap.Logger, obs Observer) CreateTagHandler {
	return decorate[CreateTag, CreateTagResult](createTagHandler{repo: repo}, log, obs)
}

type createTagHandler struct {
	repo *Repository
}

// Handle creates the tag.
func (h createTagHandler) Handle(ctx context.Context, cmd CreateTag) (CreateTagResult, error) {
	id := domain.TagIDFor(cmd.Meta.AccountID, cmd.Name)
	pos, err := execute(ctx, h.repo, cmd.Meta, id, func(ctx context.Context, s *session) error {
		if _, err := loadAccount(ctx, s, cmd.Meta.AccountID); err != nil {
			return err
		}
		if err := checkCRMMoves(ctx, s, cmd.Meta.AccountID, cmd.Automations); err != nil {
			return err
		}
		tag := domain.TagStream(id)
		if err := s.load(ctx, tag); err != nil {
			return err
		}
		return tag.Create(cmd.Meta.AccountID, cmd.Name, cmd.Order, cmd.Automations)
	})
	if err != nil {
		return CreateTagResult{}, err
	}
	return CreateTagResult{TagID: id, Position: pos}, nil
}

// checkCRMMoves refuses crm.move automations whose CRM is not one of the account's, or whose
// stage is not one of that CRM's: a tag must never name a pipeline it cannot move leads into.
// A CRM of another account is unknown here, like any id of another account in a request body.
func checkCRMMoves(ctx context.Context, s *session, accountID string, automations []domain.Automation) error {
	for i, a := range automations {
		if a.Type != domain.AutomationCRMMove || a.CRMID == "" || a.StageID == "" {
			continue // Tag.Create reports what is missing
		}
		crm, err := loadCRM(ctx, s, accountID, a.CRMID)
		if domain.KindOf(err) != 0 {
			return domain.InvalidField(fmt.Sprintf("automations[%d].crmId", i), "automations[%d].crmId %q is not a CRM of this account", i, a.CRMID)
		}
		if err != nil {
			return err
		}
		if !crm.HasStage(a.StageID) {
			return domain.InvalidField(fmt.Sprintf("automations[%d].stageId", i), "automations[%d].stageId %q is not a stage of CRM %s", i, a.StageID, a.CRMID)
		}
	}
	return nil
}
