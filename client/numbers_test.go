package client_test

import (
	"context"
	"testing"

	"github.com/funnelhq/funnel/client"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// precise has more significant digits than a float32 holds (about 7): typed float32, it would
// reach the service as 12345678.
const precise = 12345678.123456

// A number sent through the client reaches the service unchanged, and a number in a webhook
// payload decodes unchanged: the document's numbers are doubles, so the client's are float64.
func TestClientNumbersKeepTheirPrecision(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		c := newClient(t, svc, acc.Key)

		// A custom field is kept as the JSON text of its value.
		field := svc.NewCustomField(t, acc.ID, "Revenue")
		var value client.CustomFieldValue
		if err := value.FromCustomFieldValue1(precise); err != nil {
			t.Fatal(err)
		}
		upserted, err := c.UpsertContactWithResponse(ctx, nil, client.UpsertContactRequest{
			Email: "ada@example.com", CustomFields: &map[string]*client.CustomFieldValue{field: &value}})
		if err != nil || upserted.JSON200 == nil {
			t.Fatalf("upsert: %v %s", err, upserted.Body)
		}
		if got := upserted.JSON200.Contact.CustomFields[field]; got != "12345678.123456" {
			t.Errorf("the custom field was kept as %q, want 12345678.123456", got)
		}

		// A form answer comes back in the form.submitted payload (the sample built from the
		// account's own submission) as it was sent.
		formID, fieldIDs := svc.NewForm(t, acc.ID, "Quote", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Budget", "type": "number"})
		var email, budget client.AnswerValue
		if err := email.FromAnswerValue0("ada@example.com"); err != nil {
			t.Fatal(err)
		}
		if err := budget.FromAnswerValue1(precise); err != nil {
			t.Fatal(err)
		}
		submitted, err := c.SubmitFormWithResponse(ctx, formID, nil, client.SubmitFormRequest{
			Values: map[string]*client.AnswerValue{fieldIDs[0]: &email, fieldIDs[1]: &budget}})
		if err != nil || submitted.StatusCode() >= 300 {
			t.Fatalf("submit: %v %s", err, submitted.Body)
		}
		samples, err := c.ListSampleEventsWithResponse(ctx, client.EventNameOrAlias("form.submitted"))
		if err != nil || samples.JSON200 == nil || len(samples.JSON200.Events) != 1 {
			t.Fatalf("samples: %v %s", err, samples.Body)
		}
		event, err := samples.JSON200.Events[0].ValueByDiscriminator()
		if err != nil {
			t.Fatal(err)
		}
		form, ok := event.(client.FormSubmittedEvent)
		if !ok {
			t.Fatalf("the sample decoded as %T", event)
		}
		if len(form.Data.Fields) != 2 || form.Data.Fields[1].Value == nil {
			t.Fatalf("fields %+v", form.Data.Fields)
		}
		got, err := form.Data.Fields[1].Value.AsSubmittedFieldValue1()
		if err != nil || got != precise {
			t.Errorf("the budget came back as %v (%v), want %v", got, err, precise)
		}
		inData, err := form.Data.SubmissionData["Budget"].AsSubmittedValue1()
		if err != nil || inData != precise {
			t.Errorf("submissionData.Budget came back as %v (%v), want %v", inData, err, precise)
		}
	})
}
