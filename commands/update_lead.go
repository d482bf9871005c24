package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// UpdateLead changes a lead's title, stage or amount (PATCH /api/v1/crms/:crmId/leads/:leadId).
// Absent fields are left as they are; at least one must be given.
type UpdateLead struct {
	Meta    Meta
	CRMID   string
	LeadID  string
	Title   *string
	StageID *string
	Amount  *int64 // minor units, ≥ 0
}

// UpdateLeadResult is the position to wait for.
type UpdateLeadResult struct {
	Position int64
}

// UpdateLeadHandler handles UpdateLead.
type UpdateLeadHandler = Handler[UpdateLead, UpdateLeadResult]

// NewUpdateLeadHandler returns the handler of UpdateLead, logged and measured.
func NewUpdateLeadHandler(repo *Repository, log *zap.Logger, obs Observer) UpdateLeadHandler {
	return decorate[UpdateLead, UpdateLeadResult](updateLeadHandler{repo: repo}, log, obs)
}

type updateLeadHandler struct {
	repo *Repository
}

// Handle updates the lead.
func (h updateLeadHandler) Handle(ctx context.Context, cmd UpdateLead) (UpdateLeadResult, error) {
	if cmd.Title == nil && cmd.StageID == nil && cmd.Amount == nil {
		return UpdateLeadResult{}, domain.Invalid("give at least one of title, stageId, amount")
	}
	pos, err := execute(ctx, h.repo, cmd.Meta, cmd.LeadID, func(ctx context.Context, s *session) error {
		crm, err := loadCRM(ctx, s, cmd.Meta.AccountID, cmd.CRMID)
		if err != nil {
			return err
		}
		if !isID(cmd.LeadID, leadPrefix) {
			return domain.NotFound("lead not found")
		}
		lead, err := loadOnce(ctx, s, cmd.LeadID, domain.LeadStream)
		if err != nil {
			return err
		}
		switch {
		case !lead.Exists():
			return domain.NotFound("lead not found")
		case lead.AccountID() != cmd.Meta.AccountID:
			return domain.Forbidden("lead belongs to another account")
		case lead.CRMID() != crm.StreamID():
			return domain.NotFound("lead not found in this crm")
		}
		if cmd.StageID != nil {
			if err := lead.MoveTo(crm, *cmd.StageID); err != nil {
				return err
			}
		}
		return lead.Update(cmd.Title, cmd.Amount)
	})
	if err != nil {
		return UpdateLeadResult{}, err
	}
	return UpdateLeadResult{Position: pos}, nil
}
