package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateCalendar defines a calendar: the length of its meetings, where they happen, and the
// questions a booking asks (operator API).
type CreateCalendar struct {
	Meta            Meta
	Name            string
	DurationMinutes int
	MeetingURL      string
	Questions       []domain.FieldSpec
}

// CreateCalendarResult names the new calendar.
type CreateCalendarResult struct {
	CalendarID string
	Position   int64
}

// CreateCalendarHandler handles CreateEventType.
type CreateCalendarHandler = Handler[CreateCalendar, CreateCalendarResult]

// NewCreateCalendarHandler returns the handler of CreateEventType, logged and measured.
func NewCreateCalendarHandler(repo *Repository, log *zap.Logger, obs Observer) CreateCalendarHandler {
	return decorate[CreateCalendar, CreateCalendarResult](createCalendarHandler{repo: repo}, log, obs)
}

type createCalendarHandler struct {
	repo *Repository
}

// Handle creates the calendar.
func (h createCalendarHandler) Handle(ctx context.Context, cmd CreateCalendar) (CreateCalendarResult, error) {
	id := domain.NewID(eventTypePrefix)
	pos, err := execute(ctx, h.repo, cmd.Meta, id, func(ctx context.Context, s *session) error {
		account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
		if err != nil {
			return err
		}
		eventType := domain.CalendarStream(id)
		if err := s.track(eventType); err != nil {
			return err
		}
		return eventType.Create(account, cmd.Name, cmd.DurationMinutes, cmd.MeetingURL, cmd.Questions, newIDs(questionPrefix))
	})
	if err != nil {
		return CreateCalendarResult{}, err
	}
	return CreateCalendarResult{CalendarID: id, Position: pos}, nil
}
