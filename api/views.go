package api

import (
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/wireformat"
)

// contactView is a contact as the integration API shows it.
func contactView(c projections.Contact) object {
	tagIDs := c.TagIDs
	if tagIDs == nil {
		tagIDs = []string{}
	}
	fields := c.CustomFields
	if fields == nil {
		fields = map[string]string{}
	}
	return object{
		"id":           c.ID,
		"email":        c.Email,
		"firstName":    c.FirstName,
		"lastName":     c.LastName,
		"phone":        c.Phone,
		"tagIds":       tagIDs,
		"customFields": fields,
		"createdAt":    wireformat.Time(c.CreatedAt),
		"updatedAt":    wireformat.Time(c.UpdatedAt),
	}
}

// tagView is a tag as GET /api/v1/tags shows it.
func tagView(t projections.Tag) object {
	return object{"id": t.ID, "name": t.Name, "order": t.Order, "createdAt": wireformat.Time(t.CreatedAt)}
}

// nonNil turns a nil slice into an empty one, so that JSON shows [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// crmView is a CRM pipeline with its stages in order.
func crmView(c projections.CRM) object {
	return object{"id": c.ID, "name": c.Name, "stages": stageViews(c.Stages), "createdAt": wireformat.Time(c.CreatedAt)}
}

func stageViews(stages []domain.Stage) []object {
	out := make([]object, len(stages))
	for i, s := range stages {
		out[i] = stageView(s)
	}
	return out
}

// stageView is a stage of a CRM pipeline.
func stageView(s domain.Stage) object {
	return object{"id": s.ID, "name": s.Name, "order": s.Order}
}

// leadView is a lead; amount is in minor units of the account's currency.
func leadView(l projections.Lead) object {
	return object{
		"id": l.ID, "crmId": l.CRMID, "stageId": l.StageID, "contactId": l.ContactID, "title": l.Title, "amount": l.Amount,
		"createdAt": wireformat.Time(l.CreatedAt), "updatedAt": wireformat.Time(l.UpdatedAt),
	}
}

// fieldViews are form fields or booking questions; contactField is null for an answer that
// goes nowhere on the contact.
func fieldViews(fields []domain.Field) []object {
	out := make([]object, len(fields))
	for i, f := range fields {
		out[i] = object{"id": f.ID, "label": f.Label, "type": f.Type, "contactField": wireformat.OrNull(f.ContactField), "required": f.Required}
	}
	return out
}

// formView is a form with its fields in order.
func formView(f projections.Form) object {
	return object{"id": f.ID, "name": f.Name, "fields": fieldViews(f.Fields), "createdAt": wireformat.Time(f.CreatedAt)}
}

// submissionView is a form submission; contactId is null when no answer gave an email.
func submissionView(s projections.Submission) object {
	return object{"id": s.ID, "formId": s.FormID, "submittedAt": wireformat.Time(s.SubmittedAt), "contactId": wireformat.OrNull(s.ContactID)}
}

// eventTypeView is a calendar with its questions in order.
func eventTypeView(t projections.EventType) object {
	return object{
		"id": t.ID, "name": t.Name, "durationMinutes": t.DurationMinutes, "meetingUrl": wireformat.OrNull(t.MeetingURL),
		"questions": fieldViews(t.Questions), "createdAt": wireformat.Time(t.CreatedAt),
	}
}

// bookingView is a booking: when it starts and ends, where it happens, and whose it is.
func bookingView(b projections.Booking) object {
	return object{
		"id": b.ID, "eventTypeId": b.EventTypeID, "when": wireformat.Time(b.StartTime), "endTime": wireformat.Time(b.EndTime),
		"meetingUrl": wireformat.OrNull(b.MeetingURL), "contactId": wireformat.OrNull(b.ContactID),
	}
}
