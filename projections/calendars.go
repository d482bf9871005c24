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

// Calendars is the read model of calendars (event types) and their questions.
type Calendars struct {
	readModel[writer]
	db *sql.DB
}

// NewCalendars reads the event types read model from db. Calendars are created by an operator,
// one at a time: there is no burst worth batching.
func NewCalendars(db *sql.DB) *Calendars {
	return &Calendars{db: db, readModel: eachEvent(db, "event-types", []string{"event_types"}, on(insertCalendar))}
}

func insertCalendar(w writer, r domain.Recorded, e domain.CalendarCreated) error {
	questions, err := json.Marshal(wire.List(e.Questions))
	if err != nil {
		return fmt.Errorf("event type questions: %w", err)
	}
	return w.exec(`INSERT INTO event_types (id, account_id, name, duration_minutes, meeting_url, questions, created_at, seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.CalendarID, e.AccountID, e.Name, e.DurationMinutes, e.MeetingURL, string(questions), millis(r.OccurredAt), r.Position)
}

// Calendar is a calendar as the APIs show it.
type Calendar struct {
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

func scanCalendar(row interface{ Scan(...any) error }) (Calendar, error) {
	var t Calendar
	var questions string
	var created int64
	if err := row.Scan(&t.ID, &t.AccountID, &t.Name, &t.DurationMinutes, &t.MeetingURL, &questions, &created, &t.seq); err != nil {
		return Calendar{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(questions), &t.Questions); err != nil {
		return Calendar{}, fmt.Errorf("projections: event type questions: %w", err)
	}
	t.CreatedAt = fromMillis(created)
	return t, nil
}

// Get returns one calendar of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *Calendars) Get(ctx context.Context, accountID, id string) (Calendar, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "event type")
}

// byID returns one calendar of any account (ErrNotFound when there is none).
func (p *Calendars) byID(ctx context.Context, id string) (Calendar, error) {
	t, err := scanCalendar(p.db.QueryRowContext(ctx, selectEventTypes+` WHERE id = $1`, id))
	if err != nil {
		return Calendar{}, fmt.Errorf("projections: event type %s: %w", id, err)
	}
	return t, nil
}

// List returns one page of an account's calendars, in creation order.
func (p *Calendars) List(ctx context.Context, accountID string, page paging.Page) ([]Calendar, string, error) {
	out, next, err := listInCreationOrder(ctx, p.db, scanCalendar, func(t Calendar) int64 { return t.seq }, page, selectEventTypes, `account_id = $1`, accountID)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list event types: %w", err)
	}
	return out, next, nil
}
