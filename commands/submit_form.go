package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// SubmitForm records a submission of a form (POST /api/v1/forms/:formId/submissions). When an
// answer maps to builtin:email, the submission upserts that contact through the field mapping
// and applies the form's tags with their automations; the contact, the tags, the leads they move
// and the submission are appended together.
type SubmitForm struct {
	Meta   Meta
	FormID string
	Values map[string]any // field id → value
}

// SubmitFormResult names the submission and its contact ("" without an email).
type SubmitFormResult struct {
	SubmissionID string
	FormID       string
	ContactID    string
	// SubmittedAt is the submission's time as the log holds it (to the millisecond, as the read
	// model keeps it): with the ids, all an answer shows of the submission. Zero in a result
	// kept (commands.Idempotent) by a release before it.
	SubmittedAt time.Time
	Position    int64
}

// SubmitFormHandler handles SubmitForm.
type SubmitFormHandler = Handler[SubmitForm, SubmitFormResult]

// NewSubmitFormHandler returns the handler of SubmitForm, logged and measured.
func NewSubmitFormHandler(repo *Repository, tags TagCatalogue, now func() time.Time, log *zap.Logger, obs Observer) SubmitFormHandler {
	return decorate[SubmitForm, SubmitFormResult](submitFormHandler{repo: repo, tags: tags, now: now}, log, obs)
}

type submitFormHandler struct {
	repo *Repository
	tags TagCatalogue
	now  func() time.Time
}

// Handle records the submission.
func (h submitFormHandler) Handle(ctx context.Context, cmd SubmitForm) (SubmitFormResult, error) {
	// A form never changes once created, so it is read before the session: the answers it
	// checks tell which contact the session is about.
	if !isID(cmd.FormID, formPrefix) {
		return SubmitFormResult{}, domain.NotFound("form not found")
	}
	form := domain.FormStream(cmd.FormID)
	if err := read(ctx, h.repo, form); err != nil {
		return SubmitFormResult{}, err
	}
	switch {
	case !form.Exists():
		return SubmitFormResult{}, domain.NotFound("form not found")
	case form.AccountID() != cmd.Meta.AccountID:
		return SubmitFormResult{}, domain.Forbidden("form belongs to another account")
	}
	answers, err := domain.CheckAnswers("values", form.Fields(), cmd.Values)
	if err != nil {
		return SubmitFormResult{}, err
	}
	mapping := domain.MapToContact(form.Fields(), answers)
	if err := mapping.Validate("values", form.Fields()); err != nil {
		return SubmitFormResult{}, err
	}
	var tags []domain.TagRef
	if mapping.Email != "" && len(form.TagIDs()) > 0 {
		// The form's tags were checked when it was created, and tags are never deleted.
		catalogue, err := h.tags.AccountTags(ctx, cmd.Meta.AccountID)
		if err != nil {
			return SubmitFormResult{}, err
		}
		tags = domain.ResolveTags(catalogue, domain.TagRequest{IDs: form.TagIDs()}).Tags
	}

	res := SubmitFormResult{SubmissionID: domain.NewID(submissionPrefix), FormID: cmd.FormID}
	primary := res.SubmissionID
	guessed := false
	if mapping.Email != "" {
		// As an upsert does: a submission that brings a new email costs no read of the contact's
		// stream nor of its erasure (guessContactID).
		if res.ContactID, guessed, err = h.repo.guessContactID(ctx, cmd.Meta.AccountID, mapping.Email); err != nil {
			return SubmitFormResult{}, err
		}
		primary = res.ContactID
	}
	res.Position, err = execute(ctx, h.repo, cmd.Meta, primary, func(ctx context.Context, s *session) error {
		if guessed && s.attempt > 1 {
			// The contact was not new after all: it may be an erased one, whose email now
			// belongs to the next contact.
			if res.ContactID, err = h.repo.contactIDFor(ctx, cmd.Meta.AccountID, mapping.Email); err != nil {
				return err
			}
		}
		var snapshot *domain.ContactSnapshot
		if res.ContactID != "" {
			s.mayBeNew(res.ContactID)
			contact, err := loadOnce(ctx, s, res.ContactID, domain.ContactStream)
			if err != nil {
				return err
			}
			if _, err := contact.Upsert(cmd.Meta.AccountID, mapping.Email, mapping.Profile); err != nil {
				return err
			}
			if err := applyTags(ctx, s, contact, tags); err != nil {
				return err
			}
			// The account is read for the names of the contact's custom fields only: a contact
			// with none (most new ones) costs no read of the account's stream.
			var fieldNames map[string]string
			if contact.HasCustomFieldValues() {
				account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
				if err != nil {
					return err
				}
				fieldNames = account.CustomFieldNames()
			}
			snap := contact.Snapshot(fieldNames)
			snapshot = &snap
		}
		submission := domain.SubmissionStream(res.SubmissionID)
		if err := s.track(submission); err != nil {
			return err
		}
		now := h.now()
		res.SubmittedAt = time.UnixMilli(now.UnixMilli()).UTC()
		submission.Record(form, answers, snapshot, now)
		return nil
	})
	if err != nil {
		return SubmitFormResult{}, err
	}
	return res, nil
}
