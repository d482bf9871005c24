package commands

import (
	"context"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateForm defines a form: its fields, where each answer goes on the contact, and the tags a
// submission applies (operator API).
type CreateForm struct {
	Meta   Meta
	Name   string
	Fields []domain.FieldSpec
	TagIDs []string
}

// CreateFormResult names the new form.
type CreateFormResult struct {
	FormID   string
	Position int64
}

// CreateFormHandler handles CreateForm.
type CreateFormHandler = Handler[CreateForm, CreateFormResult]

// NewCreateFormHandler returns the handler of CreateForm, logged and measured.
func NewCreateFormHandler(repo *Repository, tags TagCatalogue, log *zap.Logger, obs Observer) CreateFormHandler {
	return decorate[CreateForm, CreateFormResult](createFormHandler{repo: repo, tags: tags}, log, obs)
}

type createFormHandler struct {
	repo *Repository
	tags TagCatalogue
}

// Handle creates the form.
func (h createFormHandler) Handle(ctx context.Context, cmd CreateForm) (CreateFormResult, error) {
	tags, err := formTags(ctx, h.tags, cmd.Meta.AccountID, cmd.TagIDs)
	if err != nil {
		return CreateFormResult{}, err
	}
	id := domain.NewID(formPrefix)
	pos, err := execute(ctx, h.repo, cmd.Meta, id, func(ctx context.Context, s *session) error {
		account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
		if err != nil {
			return err
		}
		form := domain.FormStream(id)
		if err := s.track(form); err != nil {
			return err
		}
		return form.Create(account, cmd.Name, cmd.Fields, tags, newIDs(fieldPrefix))
	})
	if err != nil {
		return CreateFormResult{}, err
	}
	return CreateFormResult{FormID: id, Position: pos}, nil
}

// formTags resolves the tags a form applies. Unlike the contacts API, which skips unknown tag ids,
// a form definition refuses them, naming them: a form that silently applied fewer tags than its
// operator asked for would be a trap.
func formTags(ctx context.Context, catalogue TagCatalogue, accountID string, ids []string) ([]domain.TagRef, error) {
	req := domain.TagRequest{IDs: ids}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if req.Empty() {
		return nil, nil
	}
	all, err := catalogue.AccountTags(ctx, accountID)
	if err != nil {
		return nil, err
	}
	res := domain.ResolveTags(all, req)
	if len(res.SkippedIDs) > 0 {
		sort.Strings(res.SkippedIDs)
		return nil, domain.InvalidField("tagIds", "tagIds: not tags of this account: %s", strings.Join(res.SkippedIDs, ", "))
	}
	return res.Tags, nil
}
