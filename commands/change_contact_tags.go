package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// TagAction is what ChangeContactTags does with the tags.
type TagAction string

// The tag actions of POST /api/v1/contacts/tags and /contacts/:id/tags.
const (
	TagsAdd    TagAction = "add"
	TagsRemove TagAction = "remove"
)

// ChangeContactTags adds or removes tags on a contact named by email or by id.
// Adding by email upserts the contact (with FirstName when given); removing needs the contact
// to exist; by id the contact must exist and belong to the account.
type ChangeContactTags struct {
	Meta      Meta
	Email     string // either Email
	ContactID string // or ContactID
	FirstName *string
	Tags      domain.TagRequest
	Action    TagAction
}

// ChangeContactTagsHandler handles ChangeContactTags.
type ChangeContactTagsHandler = Handler[ChangeContactTags, ContactResult]

// NewChangeContactTagsHandler returns the handler of ChangeContactTags, logged and measured.
func NewChangeContactTagsHandler(repo *Repository, tags TagCatalogue, log *zap.Logger, obs Observer) ChangeContactTagsHandler {
	return decorate[ChangeContactTags, ContactResult](changeContactTagsHandler{repo: repo, tags: tags}, log, obs)
}

type changeContactTagsHandler struct {
	repo *Repository
	tags TagCatalogue
}

// Handle changes the tags.
func (h changeContactTagsHandler) Handle(ctx context.Context, cmd ChangeContactTags) (ContactResult, error) {
	if cmd.Action != TagsAdd && cmd.Action != TagsRemove {
		return ContactResult{}, domain.InvalidField("action", "action must be add or remove")
	}
	if cmd.Tags.Empty() {
		return ContactResult{}, domain.Invalid("tagIds or tagNames is required")
	}
	var email string
	var res ContactResult
	if cmd.ContactID == "" {
		var err error
		if email, err = domain.NormalizeEmail(cmd.Email); err != nil {
			return ContactResult{}, err
		}
		if res.ContactID, err = h.repo.contactIDFor(ctx, cmd.Meta.AccountID, email); err != nil {
			return ContactResult{}, err
		}
	} else {
		if !domain.IsContactID(cmd.ContactID) {
			return ContactResult{}, domain.NotFound("contact not found")
		}
		res.ContactID = cmd.ContactID
	}
	profile := domain.ContactProfile{FirstName: cmd.FirstName}
	if err := profile.Validate(); err != nil {
		return ContactResult{}, err
	}
	resolution, err := resolveTags(ctx, h.tags, cmd.Meta.AccountID, cmd.Tags)
	if err != nil {
		return ContactResult{}, err
	}
	res.Tags = resolution
	res.Written, err = executeWrite(ctx, h.repo, cmd.Meta, res.ContactID, func(ctx context.Context, s *session) error {
		contact := domain.ContactStream(res.ContactID)
		if err := s.load(ctx, contact); err != nil {
			return err
		}
		switch {
		case contact.Exists() && contact.AccountID() != cmd.Meta.AccountID:
			return domain.Forbidden("contact belongs to another account")
		case !contact.Exists() && (cmd.Action == TagsRemove || cmd.ContactID != ""):
			return domain.NotFound("contact not found")
		}
		if cmd.Action == TagsRemove {
			contact.RemoveTags(resolution.Tags)
			return nil
		}
		created, err := contact.Upsert(cmd.Meta.AccountID, email, profile)
		if err != nil {
			return err
		}
		res.Created = created
		return applyTags(ctx, s, contact, resolution.Tags)
	})
	if err != nil {
		return ContactResult{}, err
	}
	return res, nil
}
