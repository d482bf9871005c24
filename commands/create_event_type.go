package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateEventType defines a calendar: the length of its meetings, where they happen, and the
// questions a booking asks (operator API).
type CreateEventType struct {
	Meta            Meta
	Name            string
	DurationMinutes int
	MeetingURL      string
	Questions       []domain.FieldSpec
}

// CreateEventTypeResult names the new calendar.
type CreateEventTypeResult struct {
	EventTypeID string
	Position    int64
}

// CreateEventTypeHandler handles CreateEventType.
type CreateEventTypeHandler = Handler[CreateEventType, CreateEventTypeResult]

// NewCreateEventTypeHandler returns the handler of CreateEventType, logged and measured.
func NewCreateEventTypeHandler(repo *Repository, log *zap.Logger, obs Observer) CreateEventTypeHandler {
	return decorate[CreateEventType, CreateEventTypeResult](createEventTypeHandler{repo: repo}, log, obs)
}

type createEventTypeHandler struct {
	repo *Repository
}

// Handle creates the calendar.
func (h createEventTypeHandler) Handle(ctx context.Context, cmd CreateEventType) (CreateEventTypeResult, error) {
	id := domain.NewID(eventTypePrefix)
	pos, err := execute(ctx, h.repo, cmd.Meta, id, func(ctx context.Context, s *session) error {
		account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
		if err != nil {
			return err
		}
		eventType := domain.EventTypeStream(id)
		if err := s.track(eventType); err != nil {
			return err
		}
		return eventType.Create(account, cmd.Name, cmd.DurationMinutes, cmd.MeetingURL, cmd.Questions, newIDs(questionPrefix))
	})
	if err != nil {
		return CreateEventTypeResult{}, err
	}
	return CreateEventTypeResult{EventTypeID: id, Position: pos}, nil
}
