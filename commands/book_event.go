package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// BookEvent books a slot of a calendar (POST /api/v1/scheduling/:eventTypeId/bookings). The
// answers map to the contact like form fields; when one gives an email, the contact is upserted
// in the same append as the booking.
type BookEvent struct {
	Meta        Meta
	EventTypeID string
	Start       time.Time
	Timezone    string         // IANA name, optional
	Answers     map[string]any // question id → answer
}

// BookEventResult names the booking and its contact ("" without an email).
type BookEventResult struct {
	BookingID string
	ContactID string
	Position  int64
}

// BookEventHandler handles BookEvent.
type BookEventHandler = Handler[BookEvent, BookEventResult]

// NewBookEventHandler returns the handler of BookEvent, logged and measured.
func NewBookEventHandler(repo *Repository, now func() time.Time, log *zap.Logger, obs Observer) BookEventHandler {
	return decorate[BookEvent, BookEventResult](bookEventHandler{repo: repo, now: now}, log, obs)
}

type bookEventHandler struct {
	repo *Repository
	now  func() time.Time
}

// Handle books the slot. The booking lives on the calendar's stream, which is the command's
// primary stream: concurrent bookings of one calendar queue in this process and conflict on the
// stream version across processes, so of two overlapping bookings only one is ever appended.
func (h bookEventHandler) Handle(ctx context.Context, cmd BookEvent) (BookEventResult, error) {
	if !isID(cmd.EventTypeID, eventTypePrefix) {
		return BookEventResult{}, domain.NotFound("event type not found")
	}
	res := BookEventResult{BookingID: domain.NewID(bookingPrefix)}
	pos, err := execute(ctx, h.repo, cmd.Meta, cmd.EventTypeID, func(ctx context.Context, s *session) error {
		res.ContactID = ""
		eventType, err := loadOnce(ctx, s, cmd.EventTypeID, domain.CalendarStream)
		if err != nil {
			return err
		}
		switch {
		case !eventType.Exists():
			return domain.NotFound("event type not found")
		case eventType.AccountID() != cmd.Meta.AccountID:
			return domain.Forbidden("event type belongs to another account")
		}
		answers, err := domain.CheckAnswers("answers", eventType.Questions(), cmd.Answers)
		if err != nil {
			return err
		}
		req := domain.BookingRequest{Start: cmd.Start, Timezone: cmd.Timezone, Answers: answers, Contact: domain.MapToContact(eventType.Questions(), answers)}
		if err := req.Contact.Validate("answers", eventType.Questions()); err != nil {
			return err
		}
		if req.Contact.Email != "" {
			account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
			if err != nil {
				return err
			}
			if res.ContactID, err = s.repo.contactIDFor(ctx, cmd.Meta.AccountID, req.Contact.Email); err != nil {
				return err
			}
			contact, err := loadOnce(ctx, s, res.ContactID, domain.ContactStream)
			if err != nil {
				return err
			}
			if _, err := contact.Upsert(cmd.Meta.AccountID, req.Contact.Email, req.Contact.Profile); err != nil {
				return err
			}
			snap := contact.Snapshot(account.CustomFieldNames())
			req.Snapshot = &snap
		}
		return eventType.Book(res.BookingID, req, h.now())
	})
	if err != nil {
		return BookEventResult{}, err
	}
	res.Position = pos
	return res, nil
}
