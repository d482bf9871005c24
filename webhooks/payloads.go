package webhooks

import (
	"encoding/json"
	"fmt"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// The mappers below make the payloads of form.submitted and scheduling.booked, the generated
// wire types of integration.yaml's webhook schemas, from their domain events; events.go names
// each as the source of its event, beside a sample builder (samples.go) of the same type.

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

// optional shows a string that is not set as null rather than "".
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
