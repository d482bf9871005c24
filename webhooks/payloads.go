package webhooks

import (
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// The payloads below follow the tables of integration-api.md section 6 member for member, in
// their order. Each is made by a mapper that events.go names as the source of its event, and by
// a sample builder (samples.go) of the same type.

// formSubmitted is the form.submitted payload.
type formSubmitted struct {
	FormID         string         `json:"formId"`
	FormName       string         `json:"formName"`
	SubmissionID   string         `json:"submissionId"`
	SubmittedAt    string         `json:"submittedAt"`
	SubmissionData map[string]any `json:"submissionData"`
	Fields         []fieldEntry   `json:"fields"`
	Contact        formContact    `json:"contact"`
}

type fieldEntry struct {
	ID           string  `json:"id"`
	Label        string  `json:"label"`
	Type         string  `json:"type"`
	ContactField *string `json:"contactField"` // null for a field that fills no contact field, as the forms API shows it
	Value        any     `json:"value"`
}

type formContact struct {
	ContactID           string                `json:"contactId"`
	Email               string                `json:"email"`
	FirstName           string                `json:"firstName"`
	LastName            string                `json:"lastName"`
	Phone               string                `json:"phone"`
	CustomFields        map[string]string     `json:"customFields"`
	CustomFieldsLabeled []domain.LabeledValue `json:"customFieldsLabeled"`
}

// formSubmittedData maps a submission. submissionData maps each answered field's label ("field
// name") to its value; fields lists every field of the form, unanswered ones with a null value.
// Without an email there is no contact: its members are empty.
func formSubmittedData(e domain.FormSubmitted) (formSubmitted, resources) {
	d := formSubmitted{
		FormID: e.FormID, FormName: e.FormName, SubmissionID: e.SubmissionID, SubmittedAt: wire.Time(e.SubmittedAt),
		SubmissionData: map[string]any{}, Fields: []fieldEntry{},
		Contact: formContact{CustomFields: map[string]string{}, CustomFieldsLabeled: []domain.LabeledValue{}},
	}
	for _, f := range e.Fields {
		entry := fieldEntry{ID: f.ID, Label: f.Label, Type: f.Type, Value: f.Value}
		if f.ContactField != "" {
			entry.ContactField = &f.ContactField
		}
		d.Fields = append(d.Fields, entry)
		if f.Value != nil {
			if _, dup := d.SubmissionData[f.Label]; !dup {
				d.SubmissionData[f.Label] = f.Value
			}
		}
	}
	if c := e.Contact; c != nil {
		d.Contact = formContact{ContactID: c.ContactID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Phone: c.Phone,
			CustomFields: wire.Object(c.CustomFields), CustomFieldsLabeled: wire.List(c.CustomFieldsLabeled)}
	}
	return d, resources{formID: e.FormID}
}

// booked is the scheduling.booked payload.
type booked struct {
	EventTypeID   string `json:"eventTypeId"`
	EventTypeName string `json:"eventTypeName"`
	BookingID     string `json:"bookingId"`
	When          string `json:"when"`
	// MeetingURL is null when the calendar has none, as the scheduling API shows it.
	MeetingURL *string        `json:"meetingUrl"`
	Attendee   attendee       `json:"attendee"`
	Contact    contactSummary `json:"contact"`
}

type attendee struct {
	ContactFields map[string]any `json:"contactFields"`
	Answers       map[string]any `json:"answers"`
}

// contactSummary is the contact of a booking or a checkout event.
type contactSummary struct {
	ContactID string `json:"contactId"`
	Email     string `json:"email"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
}

// bookedData maps a booking. Without an email there is no contact: its members are empty.
func bookedData(e domain.BookingCreated) (booked, resources) {
	d := booked{
		EventTypeID: e.CalendarID, EventTypeName: e.CalendarName, BookingID: e.BookingID,
		When: wire.Time(e.StartTime), MeetingURL: optional(e.MeetingURL),
		Attendee: attendee{ContactFields: wire.Object(e.ContactFields), Answers: wire.Object(map[string]any(e.Answers))},
	}
	if c := e.Contact; c != nil {
		d.Contact = contactSummary{ContactID: c.ContactID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName}
	}
	return d, resources{eventTypeID: e.CalendarID}
}

// optional shows a string that is not set as null rather than "" (wire.OrNull, for a
// typed payload).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
