package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
)

// EventTypes is the read model of calendars (event types) and their questions.
type EventTypes struct {
	readModel[writer]
	db *sql.DB
}

// NewEventTypes reads the event types read model from db. Calendars are created by an operator,
// one at a time: there is no burst worth batching.
func NewEventTypes(db *sql.DB) *EventTypes {
	return &EventTypes{db: db, readModel: eachEvent(db, "event-types", []string{"event_types"}, on(insertEventType))}
}

func insertEventType(w writer, r domain.Recorded, e domain.EventTypeCreated) error {
	questions, err := json.Marshal(wire.List(e.Questions))
	if err != nil {
		return fmt.Errorf("event type questions: %w", err)
	}
	return w.exec(`INSERT INTO event_types (id, account_id, name, duration_minutes, meeting_url, questions, created_at, seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.EventTypeID, e.AccountID, e.Name, e.DurationMinutes, e.MeetingURL, string(questions), millis(r.OccurredAt), r.Position)
}

// EventType is a calendar as the APIs show it.
type EventType struct {
	ID              string
	AccountID       string
	Name            string
	DurationMinutes int
	MeetingURL      string
	Questions       []domain.Field
	CreatedAt       time.Time
	seq             int64
}

const selectEventTypes = `SELECT id, account_id, name, duration_minutes, meeting_url, questions, created_at, seq FROM event_types`

func scanEventType(row interface{ Scan(...any) error }) (EventType, error) {
	var t EventType
	var questions string
	var created int64
	if err := row.Scan(&t.ID, &t.AccountID, &t.Name, &t.DurationMinutes, &t.MeetingURL, &questions, &created, &t.seq); err != nil {
		return EventType{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(questions), &t.Questions); err != nil {
		return EventType{}, fmt.Errorf("projections: event type questions: %w", err)
	}
	t.CreatedAt = fromMillis(created)
	return t, nil
}

// Get returns one calendar of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *EventTypes) Get(ctx context.Context, accountID, id string) (EventType, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "event type")
}

// byID returns one calendar of any account (ErrNotFound when there is none).
func (p *EventTypes) byID(ctx context.Context, id string) (EventType, error) {
	t, err := scanEventType(p.db.QueryRowContext(ctx, selectEventTypes+` WHERE id = $1`, id))
	if err != nil {
		return EventType{}, fmt.Errorf("projections: event type %s: %w", id, err)
	}
	return t, nil
}

// List returns one page of an account's calendars, in creation order.
func (p *EventTypes) List(ctx context.Context, accountID string, page paging.Page) ([]EventType, string, error) {
	out, next, err := listInCreationOrder(ctx, p.db, scanEventType, func(t EventType) int64 { return t.seq }, page, selectEventTypes, `account_id = $1`, accountID)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list event types: %w", err)
	}
	return out, next, nil
}
