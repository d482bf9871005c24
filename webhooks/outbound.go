// Package webhooks turns domain events into signed outbound webhooks (DESIGN.md invariant 8):
// a projector maps events to outbound events and records one delivery per matching subscription
// in the transaction that moves its checkpoint (an outbox); a dispatcher claims due deliveries,
// signs and sends them, and retries them durably.
package webhooks

import (
	"encoding/json"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/wireformat"
)

// Envelope is the body of every delivery (integration-api.md section 6). ID is the domain
// event's id: the same for every subscription and every retry.
type Envelope struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CreatedAt string `json:"createdAt"`
	Data      any    `json:"data"`
}

// outbound is a domain event as webhooks see it.
type outbound struct {
	envelope  Envelope
	resources domain.OutboundResources
	// orderingKey names the resource whose events must reach a subscription in order
	// (a checkout subscription); empty for independent events.
	orderingKey string
}

// domainEvents are the event types that have an outbound counterpart.
var domainEvents = map[string]bool{
	domain.FormSubmitted{}.EventType():  true,
	domain.BookingCreated{}.EventType(): true,
}

// toOutbound maps a recorded domain event to its outbound event; ok is false for events that
// have none.
func toOutbound(r domain.Recorded) (outbound, bool, error) {
	if !domainEvents[r.Type] {
		return outbound{}, false, nil
	}
	e, err := r.Decode()
	if err != nil {
		return outbound{}, false, err
	}
	env := Envelope{ID: r.ID, CreatedAt: wireformat.Time(r.OccurredAt)}
	switch e := e.(type) {
	case domain.FormSubmitted:
		env.Type, env.Data = domain.EventFormSubmitted, formSubmittedData(e)
		return outbound{envelope: env, resources: domain.OutboundResources{FormID: e.FormID}}, true, nil
	case domain.BookingCreated:
		env.Type, env.Data = domain.EventSchedulingBooked, bookedData(e)
		return outbound{envelope: env, resources: domain.OutboundResources{EventTypeID: e.EventTypeID}}, true, nil
	}
	return outbound{}, false, nil
}

// The payloads below follow the tables of integration-api.md section 6 member for member, in
// their order.

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

// formSubmittedData is the form.submitted payload. submissionData maps each answered field's
// label ("field name") to its value; fields lists every field of the form, unanswered ones with
// a null value. Without an email there is no contact: its members are empty.
func formSubmittedData(e domain.FormSubmitted) formSubmitted {
	d := formSubmitted{
		FormID: e.FormID, FormName: e.FormName, SubmissionID: e.SubmissionID, SubmittedAt: wireformat.Time(e.SubmittedAt),
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
			CustomFields: wireformat.Object(c.CustomFields), CustomFieldsLabeled: wireformat.List(c.CustomFieldsLabeled)}
	}
	return d
}

type booked struct {
	EventTypeID   string        `json:"eventTypeId"`
	EventTypeName string        `json:"eventTypeName"`
	BookingID     string        `json:"bookingId"`
	When          string        `json:"when"`
	MeetingURL    string        `json:"meetingUrl"`
	Attendee      attendee      `json:"attendee"`
	Contact       bookedContact `json:"contact"`
}

type attendee struct {
	ContactFields map[string]any `json:"contactFields"`
	Answers       map[string]any `json:"answers"`
}

type bookedContact struct {
	ContactID string `json:"contactId"`
	Email     string `json:"email"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
}

// bookedData is the scheduling.booked payload.
func bookedData(e domain.BookingCreated) booked {
	d := booked{
		EventTypeID: e.EventTypeID, EventTypeName: e.EventTypeName, BookingID: e.BookingID,
		When: wireformat.Time(e.StartTime), MeetingURL: e.MeetingURL,
		Attendee: attendee{ContactFields: wireformat.Object(e.ContactFields), Answers: wireformat.Object(map[string]any(e.Answers))},
	}
	if c := e.Contact; c != nil {
		d.Contact = bookedContact{ContactID: c.ContactID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName}
	}
	return d
}

func nonNilMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// body encodes an envelope: the bytes every attempt of a delivery sends.
func (o outbound) body() ([]byte, error) {
	return json.Marshal(o.envelope)
}

func ptr(s string) *string { return &s }
