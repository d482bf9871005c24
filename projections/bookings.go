package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// Bookings is the read model of calendar bookings.
type Bookings struct {
	readModel[*bookingBatch]
	db *sql.DB
}

// NewBookings reads the bookings read model from db.
func NewBookings(db *sql.DB) *Bookings {
	return &Bookings{db: db, readModel: folded(db, "bookings", []string{"bookings"}, newBookingBatch,
		on((*bookingBatch).created),
		on((*bookingBatch).erased),
	)}
}

// bookingBatch collects a batch's bookings, and flush inserts them with one statement per 100.
type bookingBatch struct {
	writer
	rows [][]any
	gone []string // contacts erased: their bookings are deleted, after the batch's inserts
}

// erased deletes the bookings of an erased contact.
func (b *bookingBatch) erased(_ domain.Recorded, e domain.ContactErased) error {
	b.gone = append(b.gone, e.ContactID)
	return nil
}

func newBookingBatch(w writer) *bookingBatch { return &bookingBatch{writer: w} }

func (b *bookingBatch) created(r domain.Recorded, e domain.BookingCreated) error {
	if e.Answers == nil {
		e.Answers = domain.Answers{}
	}
	answers, err := json.Marshal(e.Answers)
	if err != nil {
		return fmt.Errorf("booking answers: %w", err)
	}
	b.rows = append(b.rows, []any{e.BookingID, e.AccountID, e.CalendarID, nullString(e.ContactID), millis(e.StartTime), millis(e.EndTime),
		e.Timezone, e.MeetingURL, string(answers), millis(r.OccurredAt), r.Position})
	return nil
}

func (b *bookingBatch) flush() error {
	if len(b.rows) > 0 {
		if err := b.insertRows("bookings", []string{"id", "account_id", "event_type_id", "contact_id", "start_time", "end_time",
			"timezone", "meeting_url", "answers", "created_at", "seq"}, b.rows, ""); err != nil {
			return err
		}
	}
	for _, id := range b.gone {
		if err := b.exec(`DELETE FROM bookings WHERE contact_id = $1`, id); err != nil {
			return err
		}
	}
	return nil
}

// Booking is a booking as the APIs show it.
type Booking struct {
	ID         string
	AccountID  string
	CalendarID string
	ContactID  string // "" when no answer gave an email
	StartTime  time.Time
	EndTime    time.Time
	Timezone   string
	MeetingURL string
	Answers    map[string]any
	CreatedAt  time.Time
	seq        int64
}

const selectBookings = `SELECT id, account_id, event_type_id, contact_id, start_time, end_time, timezone, meeting_url, answers, created_at, seq FROM bookings`

func scanBooking(row interface{ Scan(...any) error }) (Booking, error) {
	var b Booking
	var contact sql.NullString
	var start, end, created int64
	var answers string
	if err := row.Scan(&b.ID, &b.AccountID, &b.CalendarID, &contact, &start, &end, &b.Timezone, &b.MeetingURL, &answers, &created, &b.seq); err != nil {
		return Booking{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(answers), &b.Answers); err != nil {
		return Booking{}, fmt.Errorf("projections: booking answers: %w", err)
	}
	b.ContactID = contact.String
	b.StartTime, b.EndTime, b.CreatedAt = fromMillis(start), fromMillis(end), fromMillis(created)
	return b, nil
}

// Get returns one booking of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *Bookings) Get(ctx context.Context, accountID, id string) (Booking, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "booking")
}

// byID returns one booking of any account (ErrNotFound when there is none).
func (p *Bookings) byID(ctx context.Context, id string) (Booking, error) {
	b, err := scanBooking(p.db.QueryRowContext(ctx, selectBookings+` WHERE id = $1`, id))
	if err != nil {
		return Booking{}, fmt.Errorf("projections: booking %s: %w", id, err)
	}
	return b, nil
}

// List returns one page of a calendar's bookings, newest first (decisions.md "Lists").
func (p *Bookings) List(ctx context.Context, accountID, eventTypeID string, page paging.Page) ([]Booking, string, error) {
	before := int64(math.MaxInt64)
	if page.Cursor != "" {
		if err := paging.DecodeCursor(page.Cursor, &before); err != nil {
			return nil, "", err
		}
	}
	out, err := queryAll(ctx, p.db, scanBooking, selectBookings+fmt.Sprintf(` WHERE account_id = $1 AND event_type_id = $2 AND seq < $3 ORDER BY seq DESC LIMIT %d`, sqldb.TextLimit(page.Limit+1)),
		accountID, eventTypeID, before)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list bookings: %w", err)
	}
	out, next := paging.Cut(out, page.Limit, func(b Booking) any { return b.seq })
	return out, next, nil
}
