package domain

import (
	"net/url"
	"strings"
	"time"
)

// maxDurationMinutes bounds a calendar's meeting length (one day).
const maxDurationMinutes = 24 * 60

// maxBookingYearsAhead bounds how far ahead a booking may start: no calendar plans further, and
// every time stays one that RFC 3339 can write (a year below 10000).
const maxBookingYearsAhead = 10

// Calendar is a calendar of meetings of one length that people book. Its bookings live on its
// stream, so that two bookings of one slot conflict on the stream version and only one wins.
type Calendar struct {
	id         string
	exists     bool
	accountID  string
	name       string
	duration   time.Duration
	meetingURL string
	questions  []Field
	booked     []interval
	changes
}

type interval struct{ start, end time.Time }

// CalendarStream returns an empty calendar to load stream id into.
func CalendarStream(id string) *Calendar { return &Calendar{id: id} }

// StreamID is the calendar id.
func (t *Calendar) StreamID() string { return t.id }

// Exists tells whether the calendar was created.
func (t *Calendar) Exists() bool { return t.exists }

// AccountID is the account the calendar belongs to.
func (t *Calendar) AccountID() string { return t.accountID }

// Questions are what a booking asks, in order.
func (t *Calendar) Questions() []Field { return t.questions }

// Create defines the calendar.
func (t *Calendar) Create(account *Account, name string, durationMinutes int, meetingURL string, specs []FieldSpec, newID func() string) error {
	name = strings.TrimSpace(name)
	if err := requireName("name", name); err != nil {
		return err
	}
	if durationMinutes < 1 || durationMinutes > maxDurationMinutes {
		return InvalidField("durationMinutes", "durationMinutes must be between 1 and %d", maxDurationMinutes)
	}
	meetingURL = strings.TrimSpace(meetingURL)
	if meetingURL != "" {
		u, err := url.Parse(meetingURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(meetingURL) > 2048 {
			return InvalidField("meetingUrl", "meetingUrl must be an absolute http(s) URL")
		}
	}
	questions, err := defineFields("questions", specs, account, newID)
	if err != nil {
		return err
	}
	t.record(CalendarCreated{CalendarID: t.id, AccountID: account.StreamID(), Name: name, DurationMinutes: durationMinutes, MeetingURL: meetingURL, Questions: questions})
	return nil
}

// BookingRequest is what a booking asks for.
type BookingRequest struct {
	Start    time.Time
	Timezone string // IANA name, optional
	Answers  Answers
	Contact  ContactMapping
	Snapshot *ContactSnapshot // the contact after the booking's upsert; nil without an email
}

// Book takes a slot. A start in the past is refused (400), and so is one that overlaps another
// booking of this calendar (409).
func (t *Calendar) Book(bookingID string, req BookingRequest, now time.Time) error {
	if !req.Start.After(now) {
		return InvalidField("startTime", "startTime must be in the future")
	}
	if req.Start.After(now.AddDate(maxBookingYearsAhead, 0, 0)) {
		return InvalidField("startTime", "startTime must be within %d years from now", maxBookingYearsAhead)
	}
	if req.Timezone != "" {
		if _, err := time.LoadLocation(req.Timezone); err != nil || strings.EqualFold(req.Timezone, "local") {
			return InvalidField("timezone", "timezone must be an IANA time zone name, such as Europe/Paris")
		}
	}
	start := req.Start.UTC().Truncate(time.Millisecond)
	end := start.Add(t.duration)
	for _, b := range t.booked {
		if start.Before(b.end) && b.start.Before(end) {
			return Refused(CodeBookingConflict, "that time overlaps another booking of this calendar")
		}
	}
	e := BookingCreated{
		BookingID: bookingID, CalendarID: t.id, CalendarName: t.name, AccountID: t.accountID,
		StartTime: start, EndTime: end, Timezone: req.Timezone, MeetingURL: t.meetingURL,
		Answers: req.Answers, ContactFields: req.Contact.Values, Contact: req.Snapshot,
	}
	if req.Snapshot != nil {
		e.ContactID = req.Snapshot.ContactID
	}
	t.record(e)
	return nil
}

// Replay applies one event of the calendar's stream.
func (t *Calendar) Replay(e Event) { t.when(e) }

func (t *Calendar) record(e Event) {
	t.when(e)
	t.pending = append(t.pending, e)
}

func (t *Calendar) when(e Event) {
	switch e := e.(type) {
	case CalendarCreated:
		t.exists, t.accountID, t.name = true, e.AccountID, e.Name
		t.duration = time.Duration(e.DurationMinutes) * time.Minute
		t.meetingURL, t.questions = e.MeetingURL, e.Questions
	case BookingCreated:
		t.booked = append(t.booked, interval{start: e.StartTime, end: e.EndTime})
	}
}

// CalendarCreated defines a calendar.
type CalendarCreated struct {
	CalendarID      string  `json:"eventTypeId"`
	AccountID       string  `json:"accountId"`
	Name            string  `json:"name"`
	DurationMinutes int     `json:"durationMinutes"`
	MeetingURL      string  `json:"meetingUrl"`
	Questions       []Field `json:"questions"`
}

// BookingCreated records a booking with a snapshot of its calendar and contact, so that the
// scheduling.booked webhook depends on this event alone. Contact is nil (and ContactID empty)
// when no answer gave an email.
type BookingCreated struct {
	BookingID     string           `json:"bookingId"`
	CalendarID    string           `json:"eventTypeId"`
	CalendarName  string           `json:"eventTypeName"`
	AccountID     string           `json:"accountId"`
	ContactID     string           `json:"contactId"`
	StartTime     time.Time        `json:"startTime"`
	EndTime       time.Time        `json:"endTime"`
	Timezone      string           `json:"timezone"`
	MeetingURL    string           `json:"meetingUrl"`
	Answers       Answers          `json:"answers"`
	ContactFields map[string]any   `json:"contactFields"`
	Contact       *ContactSnapshot `json:"contact"`
}

func (CalendarCreated) EventType() string { return "EventTypeCreated" }
func (BookingCreated) EventType() string  { return "BookingCreated" }

// ContactRef puts a booking in its contact's history.
func (e BookingCreated) ContactRef() string { return e.ContactID }

func init() {
	register(CalendarCreated{}, 1, nil)
	register(BookingCreated{}, 1, nil)
	personal(BookingCreated{}, append([]string{"answers", "contactFields"}, snapshotPaths("contact")...)...)
}

// eventTypeStateFormat numbers the layout of eventTypeState: change it with the struct.
const eventTypeStateFormat = 1

// eventTypeState is an EventType's state as Restorable encodes it. It grows with the bookings
// (the overlap check needs every one), by two numbers a booking instead of a whole event.
type eventTypeState struct {
	Exists     bool          `json:"exists"`
	AccountID  string        `json:"accountId"`
	Name       string        `json:"name"`
	Duration   time.Duration `json:"duration"`
	MeetingURL string        `json:"meetingUrl"`
	Questions  []Field       `json:"questions"`
	Booked     [][2]int64    `json:"booked"` // start and end, in Unix nanoseconds (UTC)
}

// EncodeState returns the calendar's state (Restorable).
func (t *Calendar) EncodeState() ([]byte, error) {
	var booked [][2]int64
	for _, b := range t.booked {
		booked = append(booked, [2]int64{b.start.UnixNano(), b.end.UnixNano()})
	}
	return encodeState(eventTypeStateFormat, eventTypeState{
		Exists: t.exists, AccountID: t.accountID, Name: t.name, Duration: t.duration,
		MeetingURL: t.meetingURL, Questions: t.questions, Booked: booked,
	})
}

// RestoreState sets the state of an empty calendar (Restorable).
func (t *Calendar) RestoreState(data []byte) error {
	s, err := decodeState[eventTypeState](data, eventTypeStateFormat)
	if err != nil {
		return err
	}
	t.exists, t.accountID, t.name, t.duration = s.Exists, s.AccountID, s.Name, s.Duration
	t.meetingURL, t.questions = s.MeetingURL, s.Questions
	t.booked = nil
	for _, b := range s.Booked {
		t.booked = append(t.booked, interval{start: time.Unix(0, b[0]).UTC(), end: time.Unix(0, b[1]).UTC()})
	}
	return nil
}
