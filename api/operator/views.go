package operator

import (
	"encoding/json"
	"github.com/funnelhq/funnel/api/views"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// The mappings below turn read models, webhook tables and recorded events into the generated
// wire types of the operator API's answers (api/wire/admin, from operator.yaml): the one place a
// resource's public shape meets its stored one, so that renaming a member of either is a change
// here, not a change of the other.

// accountView is an account.
func accountView(a projections.Account) admin.Account {
	return admin.Account{Id: a.ID, Name: a.Name, CreatedAt: wire.At(a.CreatedAt)}
}

// apiKeyView is an API key, never its secret.
func apiKeyView(k projections.APIKey) admin.ApiKey {
	return admin.ApiKey{Id: k.ID, Name: k.Name, Scopes: each(k.Scopes, scopeView), CreatedAt: wire.At(k.CreatedAt), Revoked: k.Revoked}
}

// issuedAPIKeyView is an API key just issued, with its secret, which only this answer shows.
func issuedAPIKeyView(k projections.APIKey, secret string) admin.IssuedApiKey {
	return admin.IssuedApiKey{
		Id: k.ID, Name: k.Name, Scopes: each(k.Scopes, scopeView), CreatedAt: wire.At(k.CreatedAt), Revoked: k.Revoked, Key: secret,
	}
}

func scopeView(s domain.Scope) admin.Scope { return admin.Scope(s) }

// customFieldView is a custom field of contacts.
func customFieldView(f projections.CustomField) admin.CustomField {
	return admin.CustomField{Id: f.ID, Name: f.Name, CreatedAt: wire.At(f.CreatedAt)}
}

// tagView is a tag with its automations.
func tagView(t projections.Tag) admin.Tag {
	return admin.Tag{Id: t.ID, Name: t.Name, Order: t.Order, CreatedAt: wire.At(t.CreatedAt), Automations: each(t.Automations, automationView)}
}

// automationView is what applying a tag does; the members its type does not use are absent.
func automationView(a domain.Automation) admin.Automation {
	return admin.Automation{
		Type: admin.AutomationType(a.Type), Subject: orAbsent(a.Subject), Body: orAbsent(a.Body),
		CampaignId: orAbsent(a.CampaignID), CrmId: orAbsent(a.CRMID), StageId: orAbsent(a.StageID),
	}
}

// crmView is a CRM pipeline with its stages in order.
func crmView(c projections.CRM) admin.CRM {
	return admin.CRM{Id: c.ID, Name: c.Name, Stages: each(c.Stages, stageView), CreatedAt: wire.At(c.CreatedAt)}
}

// stageView is a stage of a CRM pipeline.
func stageView(s domain.Stage) admin.Stage {
	return admin.Stage{Id: s.ID, Name: s.Name, Order: s.Order}
}

// leadView is a lead; its amount is in minor units of the account's currency.
func leadView(l projections.Lead) admin.Lead {
	return admin.Lead{
		Id: l.ID, CrmId: l.CRMID, StageId: l.StageID, ContactId: l.ContactID, Title: l.Title, Amount: l.Amount,
		CreatedAt: wire.At(l.CreatedAt), UpdatedAt: wire.At(l.UpdatedAt),
	}
}

// fieldView is a form field or a booking question; contactField is null for an answer that
// goes nowhere on the contact.
func fieldView(f domain.Field) admin.Field {
	return admin.Field{Id: f.ID, Label: f.Label, Type: admin.FieldType(f.Type), ContactField: orNull(f.ContactField), Required: f.Required}
}

// formView is a form with its fields in order and the tags its submissions apply.
func formView(f projections.Form) admin.Form {
	return admin.Form{Id: f.ID, Name: f.Name, Fields: each(f.Fields, fieldView), TagIds: wire.List(f.TagIDs), CreatedAt: wire.At(f.CreatedAt)}
}

// submissionView is a form submission with its answers; contactId is null when no answer gave
// an email.
func submissionView(s projections.Submission) admin.Submission {
	return admin.Submission{
		Id: s.ID, FormId: s.FormID, SubmittedAt: wire.At(s.SubmittedAt), ContactId: orNull(s.ContactID), Values: answerValues(s.Answers),
	}
}

// eventTypeView is a calendar with its questions in order.
func eventTypeView(c projections.Calendar) admin.EventType {
	return admin.EventType{
		Id: c.ID, Name: c.Name, DurationMinutes: c.DurationMinutes, MeetingUrl: orNull(c.MeetingURL),
		Questions: each(c.Questions, fieldView), CreatedAt: wire.At(c.CreatedAt),
	}
}

// bookingView is a booking: when it starts and ends, where it happens, whose it is, the time
// zone it was made in and its answers.
func bookingView(b projections.Booking) admin.Booking {
	return admin.Booking{
		Id: b.ID, EventTypeId: b.CalendarID, When: wire.At(b.StartTime), EndTime: wire.At(b.EndTime),
		MeetingUrl: orNull(b.MeetingURL), ContactId: orNull(b.ContactID), Timezone: orNull(b.Timezone), Answers: answerValues(b.Answers),
	}
}

// answerValues are the answers of a submission or a booking as kept (nil stays nil: null).
func answerValues(answers map[string]any) map[string]admin.AnswerValue {
	if answers == nil {
		return nil
	}
	out := make(map[string]admin.AnswerValue, len(answers))
	for id, v := range answers {
		out[id] = answerValue(v)
	}
	return out
}

// answerValue is one answer as kept: a string, a number or true. The read models decode answers
// from the JSON they keep, so that a value always encodes again (and a number stays a float64,
// as it was read).
func answerValue(v any) admin.AnswerValue {
	var out admin.AnswerValue
	raw, _ := json.Marshal(v)  // a value decoded from JSON cannot fail to encode
	_ = out.UnmarshalJSON(raw) // a union keeps the JSON it is given, and never fails
	return out
}

// productView is a product as the operator API shows it: with its pricing tiers and bumps, and
// the signup page of a saas_signup product ("" otherwise).
func productView(p projections.Product) admin.Product {
	return admin.Product{
		Id: p.ID, Name: p.Name, InternalName: p.InternalName, Forwarding: admin.ProductForwarding(p.Forwarding),
		ActivationBaseUrl: p.ActivationBaseURL, PricingTiers: each(p.PricingTiers, views.PricingTier), Bumps: each(p.Bumps, views.Bump),
		CreatedAt: wire.At(p.CreatedAt),
	}
}

// activationView is the activation a purchase of a saas_signup product issued, with its token,
// which only this answer and checkout.purchased show (the service keeps it sealed).
func activationView(a domain.ActivationGrant) admin.IssuedActivation {
	return admin.IssuedActivation{Token: a.Token, Url: a.URL, ExpiresAt: wire.At(a.ExpiresAt)}
}

// refundView is what a refund recorded.
func refundView(r domain.Refund) admin.Refund {
	return admin.Refund{AmountCents: r.AmountCents, FullyRefunded: r.FullyRefunded, RefundedAt: wire.At(r.RefundedAt)}
}

// webhookView is a webhook connection, REST Hook subscriptions included, with its kind and
// status; statusReason only when it is disabled for a reason.
func webhookView(s webhooks.Subscription) admin.Webhook {
	return admin.Webhook{
		Id: s.ID, Kind: admin.WebhookKind(s.Kind), Url: s.URL, Events: each(s.Events, eventNameView), Filters: filtersView(s.Filters),
		Status: admin.WebhookStatus(s.Status), StatusReason: orAbsent(s.StatusReason), CreatedAt: wire.At(s.CreatedAt),
	}
}

// webhookWithSecretView is a webhook connection with its signing secret, which only its creation
// and a rotation show.
func webhookWithSecretView(s webhooks.Subscription, secret string) admin.WebhookWithSecret {
	return admin.WebhookWithSecret{
		Id: s.ID, Kind: admin.WebhookKind(s.Kind), Url: s.URL, Events: each(s.Events, eventNameView), Filters: filtersView(s.Filters),
		Status: admin.WebhookWithSecretStatus(s.Status), StatusReason: orAbsent(s.StatusReason), CreatedAt: wire.At(s.CreatedAt),
		Secret: secret,
	}
}

func eventNameView(e string) admin.EventName { return admin.EventName(e) }

// filtersView is what a webhook connection narrows its events to; every list shows, [] when
// empty.
func filtersView(f domain.WebhookFilters) admin.WebhookFilters {
	return admin.WebhookFilters{
		FormIds: wire.List(f.FormIDs), EventTypeIds: wire.List(f.CalendarIDs), ProductIds: wire.List(f.ProductIDs),
		PricingTierIds: wire.List(f.PricingTierIDs), BumpIds: wire.List(f.BumpIDs),
	}
}

// deliveryView is a webhook delivery with its attempts; nextAttemptAt only while it is pending,
// lastError only after a failed attempt.
func deliveryView(d webhooks.Delivery) admin.Delivery {
	v := admin.Delivery{
		Id: d.ID, EventId: d.EventID, EventType: admin.EventName(d.EventType), WebhookId: d.WebhookID,
		Status: admin.DeliveryStatus(d.Status), Attempts: each(d.Attempts, attemptView), CreatedAt: wire.At(d.CreatedAt),
		LastError: orAbsent(d.LastError),
	}
	if d.Status == "pending" {
		next := wire.At(d.NextAttemptAt)
		v.NextAttemptAt = &next
	}
	return v
}

// attemptView is one attempt of a delivery.
func attemptView(a webhooks.Attempt) admin.Attempt {
	return admin.Attempt{At: wire.At(a.At), StatusCode: a.StatusCode, Error: a.Error, DurationMs: a.DurationMs}
}

// contactDetailView is a contact as the integration API shows it (contact.View()), with its leads
// in every CRM and its checkout customers with their purchases: what the console shows beside a
// contact's timeline.
func contactDetailView(c wire.Contact, leads []projections.Lead, customers []admin.ContactCustomer) admin.ContactWithLeadsAndCustomers {
	return admin.ContactWithLeadsAndCustomers{
		Id: c.Id, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Phone: c.Phone,
		TagIds: wire.List(c.TagIds), CustomFields: c.CustomFields, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		Leads: each(leads, leadView), Customers: customers,
	}
}

// contactCustomerView is a checkout customer of a contact with its payments and billing
// subscriptions.
func contactCustomerView(c projections.Customer, transactions []projections.Transaction, subscriptions []projections.BillingSubscription) admin.ContactCustomer {
	return admin.ContactCustomer{
		Id: c.ID, Email: c.Email, Name: c.Name, ContactId: c.ContactID, CreatedAt: wire.At(c.CreatedAt),
		Transactions: each(transactions, views.Transaction), Subscriptions: each(subscriptions, views.Subscription),
	}
}

// projectionView is how far one read model is.
func projectionView(p ProjectionStatus) admin.Projection {
	return admin.Projection{Name: p.Name, Position: int(p.Position), Behind: int(p.Behind), Rebuildable: p.Rebuildable}
}

// projectionRebuiltView is the answer of a rebuild: the position reached and, when the pipeline
// still lists it, the projection's status now.
func projectionRebuiltView(position int64, name string, statuses []ProjectionStatus) admin.ProjectionRebuilt {
	v := admin.ProjectionRebuilt{Success: true, RebuiltTo: int(position)}
	for _, p := range statuses {
		if p.Name == name {
			projection := projectionView(p)
			v.Projection = &projection
		}
	}
	return v
}

// metadataView is who recorded an event and in answer to what; the ids it was not given are
// absent.
func metadataView(m domain.Metadata) admin.EventMetadata {
	return admin.EventMetadata{
		AccountId: m.AccountID, Actor: m.Actor, RequestId: orAbsent(m.RequestID), CausationId: orAbsent(m.CausationID),
		CorrelationId: orAbsent(m.CorrelationID), IdempotencyId: orAbsent(m.IdempotencyID),
	}
}

// each maps every row of a list, never nil: an empty list shows [].
func each[T, V any](rows []T, view func(T) V) []V {
	out := make([]V, len(rows))
	for i, row := range rows {
		out[i] = view(row)
	}
	return out
}

// orNull shows an optional string that is not set as null rather than "" (a member the contract
// declares nullable).
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// orAbsent leaves an optional string that is not set out of the answer (a member the contract
// declares optional): the generated type omits a nil pointer.
func orAbsent(s string) *string { return orNull(s) }
