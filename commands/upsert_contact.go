package commands

import (
	"context"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// UpsertContact creates or updates the contact of an email and adds tags to it
// (POST /api/v1/contacts).
type UpsertContact struct {
	Meta    Meta
	Email   string
	Profile domain.ContactProfile
	Tags    domain.TagRequest
}

// ContactResult is the outcome of a command on one contact.
type ContactResult struct {
	ContactID string
	Created   bool
	Tags      domain.TagResolution
	Written   // Position and Types, at the top of the result's JSON as Position was before
}

// UpsertContactHandler handles UpsertContact.
type UpsertContactHandler = Handler[UpsertContact, ContactResult]

// NewUpsertContactHandler returns the handler of UpsertContact, logged and measured.
func NewUpsertContactHandler(repo *Repository, tags TagCatalogue, log *zap.Logger, obs Observer) UpsertContactHandler {
	return decorate[UpsertContact, ContactResult](upsertContactHandler{repo: repo, tags: tags}, log, obs)
}

type upsertContactHandler struct {
	repo *Repository
	tags TagCatalogue
}

// Handle upserts the contact.
func (h upsertContactHandler) Handle(ctx context.Context, cmd UpsertContact) (ContactResult, error) {
	email, err := domain.NormalizeEmail(cmd.Email)
	if err != nil {
		return ContactResult{}, err
	}
	if err := cmd.Profile.Validate(); err != nil {
		return ContactResult{}, err
	}
	resolution, err := resolveTags(ctx, h.tags, cmd.Meta.AccountID, cmd.Tags)
	if err != nil {
		return ContactResult{}, err
	}
	res := ContactResult{Tags: resolution}
	guessed := false
	if res.ContactID, guessed, err = h.repo.guessContactID(ctx, cmd.Meta.AccountID, email); err != nil {
		return ContactResult{}, err
	}
	res.Written, err = executeWrite(ctx, h.repo, cmd.Meta, res.ContactID, func(ctx context.Context, s *session) error {
		if guessed && s.attempt > 1 {
			// The contact was not new after all: it may be an erased one, whose email now
			// belongs to the next contact.
			if res.ContactID, err = h.repo.contactIDFor(ctx, cmd.Meta.AccountID, email); err != nil {
				return err
			}
		}
		s.mayBeNew(res.ContactID)
		if err := checkCustomFields(ctx, s, cmd.Meta.AccountID, cmd.Profile.CustomFields); err != nil {
			return err
		}
		_, res.Created, err = upsertContactIn(ctx, s, res.ContactID, cmd.Meta.AccountID, email, cmd.Profile, resolution.Tags)
		return err
	})
	if err != nil {
		return ContactResult{}, err
	}
	return res, nil
}

// upsertContactIn creates or updates contactID, the contact of a normalized email
// (Repository.contactIDFor), in a session and applies tags with their automations: the one way
// every command that names a buyer or a lead by email writes the contact. It reports whether the
// contact was created.
func upsertContactIn(ctx context.Context, s *session, contactID, accountID, email string, profile domain.ContactProfile, tags []domain.TagRef) (*domain.Contact, bool, error) {
	contact, err := loadOnce(ctx, s, contactID, domain.ContactStream)
	if err != nil {
		return nil, false, err
	}
	created, err := contact.Upsert(accountID, email, profile)
	if err != nil {
		return nil, false, err
	}
	return contact, created, applyTags(ctx, s, contact, tags)
}

// resolveTags validates a tag request and matches it against the account's tags.
func resolveTags(ctx context.Context, catalogue TagCatalogue, accountID string, req domain.TagRequest) (domain.TagResolution, error) {
	if err := req.Validate(); err != nil {
		return domain.TagResolution{}, err
	}
	if req.Empty() {
		return domain.TagResolution{}, nil
	}
	tags, err := catalogue.AccountTags(ctx, accountID)
	if err != nil {
		return domain.TagResolution{}, err
	}
	return domain.ResolveTags(tags, req), nil
}

// checkCustomFields refuses custom field ids the account has not defined, naming them all.
func checkCustomFields(ctx context.Context, s *session, accountID string, fields map[string]string) error {
	if len(fields) == 0 {
		return nil
	}
	account, err := loadAccount(ctx, s, accountID)
	if err != nil {
		return err
	}
	var unknown []string
	for id := range fields {
		if !account.HasCustomField(id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		param := "customFields"
		if len(unknown) == 1 {
			param += "." + unknown[0]
		}
		return domain.InvalidField(param, "unknown custom field ids: %s", strings.Join(unknown, ", "))
	}
	return nil
}
