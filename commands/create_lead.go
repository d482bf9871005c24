package commands

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateLead opens a lead in a CRM and upserts its contact by email in one call
// (POST /api/v1/crms/:crmId/leads). Tags are added to the contact (add-only, unknown ids
// skipped) and run their automations, after the lead exists: a crm.move into the same CRM moves
// this lead rather than opening a second one.
type CreateLead struct {
	Meta         Meta
	CRMID        string
	StageID      string // "": the CRM's first stage
	Title        string // blank: the contact's email
	ContactEmail string
	FirstName    *string
	Tags         domain.TagRequest
}

// CreateLeadResult names the new lead and its contact.
type CreateLeadResult struct {
	LeadID    string
	ContactID string
	Tags      domain.TagResolution
	Position  int64
}

// CreateLeadHandler handles CreateLead.
type CreateLeadHandler = Handler[CreateLead, CreateLeadResult]

// NewCreateLeadHandler returns the handler of CreateLead, logged and measured.
func NewCreateLeadHandler(repo *Repository, tags TagCatalogue, log *zap.Logger, obs Observer) CreateLeadHandler {
	return decorate[CreateLead, CreateLeadResult](createLeadHandler{repo: repo, tags: tags}, log, obs)
}

type createLeadHandler struct {
	repo *Repository
	tags TagCatalogue
}

// Handle creates the lead.
func (h createLeadHandler) Handle(ctx context.Context, cmd CreateLead) (CreateLeadResult, error) {
	email, err := domain.NormalizeEmailField("contactEmail", cmd.ContactEmail)
	if err != nil {
		return CreateLeadResult{}, err
	}
	profile := domain.ContactProfile{FirstName: cmd.FirstName}
	if err := profile.Validate(); err != nil {
		return CreateLeadResult{}, err
	}
	resolution, err := resolveTags(ctx, h.tags, cmd.Meta.AccountID, cmd.Tags)
	if err != nil {
		return CreateLeadResult{}, err
	}
	res := CreateLeadResult{Tags: resolution}
	if res.ContactID, err = h.repo.contactIDFor(ctx, cmd.Meta.AccountID, email); err != nil {
		return CreateLeadResult{}, err
	}
	res.Position, err = execute(ctx, h.repo, cmd.Meta, res.ContactID, func(ctx context.Context, s *session) error {
		crm, err := loadCRM(ctx, s, cmd.Meta.AccountID, cmd.CRMID)
		if err != nil {
			return err
		}
		stageID := cmd.StageID
		if stageID == "" {
			stageID = crm.FirstStage()
		}
		contact, err := loadOnce(ctx, s, res.ContactID, domain.ContactStream)
		if err != nil {
			return err
		}
		if _, err := contact.Upsert(cmd.Meta.AccountID, email, profile); err != nil {
			return err
		}
		title := cmd.Title
		if strings.TrimSpace(title) == "" {
			title = contact.Email()
		}
		if res.LeadID, err = openLead(s, contact, crm, stageID, title); err != nil {
			return err
		}
		return applyTags(ctx, s, contact, resolution.Tags)
	})
	if err != nil {
		return CreateLeadResult{}, err
	}
	return res, nil
}
