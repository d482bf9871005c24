package webhooks

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// The mappers below make the payloads of form.submitted and scheduling.booked, the generated
// wire types of integration.yaml's webhook schemas, from their domain events; the entries of
// formEvents and schedulingEvents (just below) name each as the source of its event, beside its
// sample builder (further below) of the same type.

// formEvents are the outbound events of forms (events.go).
var formEvents = []outboundEvent{
	define("form.submitted", domain.ScopeFormsRead, []filter{byForm}, formSubmittedSample, fromChecked(formSubmittedData)),
}

// schedulingEvents are the outbound events of calendars (events.go).
var schedulingEvents = []outboundEvent{
	define("scheduling.booked", domain.ScopeSchedulingRead, []filter{byEventType}, bookedSample, fromChecked(bookedData)),
}

// formSubmittedData maps a submission. submissionData maps each answered field's label ("field
// name") to its value; fields lists every field of the form, unanswered ones with a null value.
// Without an email there is no contact: its members are empty.
func formSubmittedData(e domain.FormSubmitted) (wire.FormSubmittedData, resources, error) {
	d := wire.FormSubmittedData{
		FormId: e.FormID, FormName: e.FormName, SubmissionId: e.SubmissionID, SubmittedAt: wire.At(e.SubmittedAt),
		SubmissionData: map[string]wire.SubmittedValue{}, Fields: []wire.SubmittedField{},
		Contact: wire.FormContact{CustomFields: map[string]string{}, CustomFieldsLabeled: []wire.LabeledValue{}},
	}
	about := resources{formID: e.FormID}
	for _, f := range e.Fields {
		entry := wire.SubmittedField{Id: f.ID, Label: f.Label, Type: wire.FieldType(f.Type), ContactField: optional(f.ContactField)}
		if f.Value != nil {
			value, err := answerOf[wire.SubmittedField_Value](f.Value)
			if err != nil {
				return d, about, fmt.Errorf("webhooks: field %s of submission %s: %w", f.ID, e.SubmissionID, err)
			}
			entry.Value = &value
			if _, dup := d.SubmissionData[f.Label]; !dup {
				if d.SubmissionData[f.Label], err = answerOf[wire.SubmittedValue](f.Value); err != nil {
					return d, about, fmt.Errorf("webhooks: field %s of submission %s: %w", f.ID, e.SubmissionID, err)
				}
			}
		}
		d.Fields = append(d.Fields, entry)
	}
	if c := e.Contact; c != nil {
		d.Contact = wire.FormContact{ContactId: c.ContactID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Phone: c.Phone,
			CustomFields: wire.Object(c.CustomFields), CustomFieldsLabeled: labeledValues(c.CustomFieldsLabeled)}
	}
	return d, about, nil
}

// labeledValues are a contact's custom field values with their fields' names.
func labeledValues(in []domain.LabeledValue) []wire.LabeledValue {
	out := make([]wire.LabeledValue, len(in))
	for i, v := range in {
		out[i] = wire.LabeledValue{Id: v.ID, Label: v.Label, Value: v.Value}
	}
	return out
}

// bookedData maps a booking. Without an email there is no contact: its members are empty.
func bookedData(e domain.BookingCreated) (wire.SchedulingBookedData, resources, error) {
	d := wire.SchedulingBookedData{
		EventTypeId: e.CalendarID, EventTypeName: e.CalendarName, BookingId: e.BookingID,
		When: wire.At(e.StartTime), MeetingUrl: optional(e.MeetingURL),
	}
	about := resources{eventTypeID: e.CalendarID}
	var err error
	if d.Attendee.ContactFields, err = answersOf(e.ContactFields); err != nil {
		return d, about, fmt.Errorf("webhooks: booking %s: %w", e.BookingID, err)
	}
	if d.Attendee.Answers, err = answersOf(e.Answers); err != nil {
		return d, about, fmt.Errorf("webhooks: booking %s: %w", e.BookingID, err)
	}
	if c := e.Contact; c != nil {
		d.Contact = wire.ContactSummary{ContactId: c.ContactID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName}
	}
	return d, about, nil
}

// answersOf are answers by question or contact field, never nil: an empty map shows {}.
func answersOf(in map[string]any) (map[string]wire.SubmittedValue, error) {
	out := make(map[string]wire.SubmittedValue, len(in))
	for k, v := range in {
		a, err := answerOf[wire.SubmittedValue](v)
		if err != nil {
			return nil, fmt.Errorf("answer %s: %w", k, err)
		}
		out[k] = a
	}
	return out, nil
}

// answerOf is an answer as it was kept (a string, a number, a boolean, decoded from the
// event's JSON) as the generated union U of the document's answer types, which holds it as
// its JSON text: a number keeps every digit it was recorded with.
func answerOf[U any, P interface {
	*U
	json.Unmarshaler
}](v any) (U, error) {
	var u U
	b, err := json.Marshal(v)
	if err == nil {
		err = P(&u).UnmarshalJSON(b)
	}
	return u, err
}

// The sample builders make realistic made-up payloads of the same generated types as real
// deliveries, beside their mappers (the entries above pair each with its event's mappers).

func formSubmittedSample(now time.Time) wire.FormSubmittedData {
	email, name := sampleAnswer[wire.SubmittedValue]("ada@example.com"), sampleAnswer[wire.SubmittedValue]("Ada Lovelace")
	emailValue, nameValue := sampleAnswer[wire.SubmittedField_Value]("ada@example.com"), sampleAnswer[wire.SubmittedField_Value]("Ada Lovelace")
	return wire.FormSubmittedData{
		FormId: "form_sample", FormName: "Newsletter signup", SubmissionId: "fsub_sample", SubmittedAt: wire.At(now),
		SubmissionData: map[string]wire.SubmittedValue{"Email": email, "Name": name},
		Fields: []wire.SubmittedField{
			{Id: "fld_email", Label: "Email", Type: "email", ContactField: optional(domain.ContactFieldEmail), Value: &emailValue},
			{Id: "fld_name", Label: "Name", Type: "text", ContactField: optional(domain.ContactFieldFullName), Value: &nameValue},
		},
		Contact: wire.FormContact{ContactId: "ct_sample", Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace", Phone: "",
			CustomFields: map[string]string{}, CustomFieldsLabeled: []wire.LabeledValue{}},
	}
}

func bookedSample(now time.Time) wire.SchedulingBookedData {
	email, name := sampleAnswer[wire.SubmittedValue]("ada@example.com"), sampleAnswer[wire.SubmittedValue]("Ada Lovelace")
	return wire.SchedulingBookedData{
		EventTypeId: "evt_sample", EventTypeName: "Discovery call", BookingId: "bkg_sample", When: wire.At(now.Add(48 * time.Hour)),
		MeetingUrl: optional("https://meet.example.com/discovery"),
		Attendee: wire.Attendee{ContactFields: map[string]wire.SubmittedValue{domain.ContactFieldEmail: email, domain.ContactFieldFullName: name},
			Answers: map[string]wire.SubmittedValue{"q_email": email, "q_name": name}},
		Contact: sampleContact,
	}
}

// sampleAnswer is a made-up answer as the union type U; a string always encodes.
func sampleAnswer[U any, P interface {
	*U
	json.Unmarshaler
}](s string) U {
	u, _ := answerOf[U, P](s)
	return u
}

// optional shows a string that is not set as null rather than "".
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
