package commands

import (
	"context"

	"funnel/domain"
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
type CreateTagHandler struct {
	store EventStore
}

// Handle creates the tag.
func (h CreateTagHandler) Handle(ctx context.Context, cmd CreateTag) (CreateTagResult, error) {
	id := domain.TagIDFor(cmd.Meta.AccountID, cmd.Name)
	pos, err := execute(ctx, h.store, cmd.Meta, id, func(ctx context.Context, s *session) error {
		if _, err := loadAccount(ctx, s, cmd.Meta.AccountID); err != nil {
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
