package integration

import (
	"github.com/funnelhq/funnel/api/views"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// The mappings below turn read models into the generated wire types of the integration API's
// answers (api/wire, from integration.yaml): the one place a resource's public shape meets its
// stored one, so that renaming a member of either is a change here, not a change of the other.

// tagView is a tag.
func tagView(t projections.Tag) wire.Tag {
	return wire.Tag{Id: t.ID, Name: t.Name, Order: t.Order, CreatedAt: wire.At(t.CreatedAt)}
}

// crmView is a CRM pipeline with its stages in order.
func crmView(c projections.CRM) wire.CRM {
	return wire.CRM{Id: c.ID, Name: c.Name, Stages: each(c.Stages, stageView), CreatedAt: wire.At(c.CreatedAt)}
}

// stageView is a stage of a CRM pipeline.
func stageView(s domain.Stage) wire.Stage {
	return wire.Stage{Id: s.ID, Name: s.Name, Order: s.Order}
}

// leadView is a lead; its amount is in minor units of the account's currency.
func leadView(l projections.Lead) wire.Lead {
	return wire.Lead{
		Id: l.ID, CrmId: l.CRMID, StageId: l.StageID, ContactId: l.ContactID, Title: l.Title, Amount: l.Amount,
		CreatedAt: wire.At(l.CreatedAt), UpdatedAt: wire.At(l.UpdatedAt),
	}
}

// fieldView is a form field or a booking question; contactField is null for an answer that
// goes nowhere on the contact.
func fieldView(f domain.Field) wire.Field {
	return wire.Field{Id: f.ID, Label: f.Label, Type: wire.FieldType(f.Type), ContactField: orNull(f.ContactField), Required: f.Required}
}

// formView is a form with its fields in order.
func formView(f projections.Form) wire.Form {
	return wire.Form{Id: f.ID, Name: f.Name, Fields: each(f.Fields, fieldView), CreatedAt: wire.At(f.CreatedAt)}
}

// submissionView is a form submission; contactId is null when no answer gave an email.
func submissionView(s projections.Submission) wire.Submission {
	return wire.Submission{Id: s.ID, FormId: s.FormID, SubmittedAt: wire.At(s.SubmittedAt), ContactId: orNull(s.ContactID)}
}

// eventTypeView is a calendar with its questions in order.
func eventTypeView(c projections.Calendar) wire.EventType {
	return wire.EventType{
		Id: c.ID, Name: c.Name, DurationMinutes: c.DurationMinutes, MeetingUrl: orNull(c.MeetingURL),
		Questions: each(c.Questions, fieldView), CreatedAt: wire.At(c.CreatedAt),
	}
}

// bookingView is a booking: when it starts and ends, where it happens, and whose it is.
func bookingView(b projections.Booking) wire.Booking {
	return wire.Booking{
		Id: b.ID, EventTypeId: b.CalendarID, When: wire.At(b.StartTime), EndTime: wire.At(b.EndTime),
		MeetingUrl: orNull(b.MeetingURL), ContactId: orNull(b.ContactID),
	}
}

// subscriptionView is a webhook subscription as the REST Hook API shows it, with its signing
// secret, which only its creation shows.
func subscriptionView(s webhooks.Subscription, secret string) wire.WebhookSubscription {
	events := make([]wire.EventName, len(s.Events))
	for i, e := range s.Events {
		events[i] = wire.EventName(e)
	}
	f := s.Filters
	return wire.WebhookSubscription{
		Id: s.ID, Url: s.URL, Events: events, Secret: secret, CreatedAt: wire.At(s.CreatedAt),
		Filters: wire.WebhookFilters{FormIds: wire.List(f.FormIDs), EventTypeIds: wire.List(f.CalendarIDs),
			ProductIds: wire.List(f.ProductIDs), PricingTierIds: wire.List(f.PricingTierIDs), BumpIds: wire.List(f.BumpIDs)},
	}
}

// productView is a checkout product as integrators see it: what a checkout integration needs to
// show and map purchases (its pricing tiers and bumps, by index, with their stable ids, and
// whether purchases forward a SaaS signup). The signup page a saas_signup product sends buyers
// to is the operator's configuration: the operator API adds it.
func productView(p projections.Product) wire.Product {
	return wire.Product{
		Id: p.ID, Name: p.Name, InternalName: p.InternalName, Forwarding: wire.Forwarding(p.Forwarding),
		PricingTiers: each(p.PricingTiers, views.PricingTier), Bumps: each(p.Bumps, views.Bump), CreatedAt: wire.At(p.CreatedAt),
	}
}

// activationView is an activation with the signup URL of the token the caller presented (the
// read model keeps no token); completedAt is null until it is completed.
func activationView(a projections.Activation, link string) wire.Activation {
	v := wire.Activation{
		Id: a.ID, Status: wire.ActivationStatus(a.Status), Email: a.Email, Product: wire.ActivationProduct{Id: a.ProductID, Name: a.ProductName},
		ExpiresAt: wire.At(a.ExpiresAt), ActivationUrl: link, CustomerId: a.CustomerID, TransactionId: a.TransactionID,
		SubscriptionId: orNull(a.SubscriptionID), ExternalUserId: orNull(a.ExternalUserID),
	}
	if !a.CompletedAt.IsZero() {
		completed := wire.At(a.CompletedAt)
		v.CompletedAt = &completed
	}
	return v
}

// each maps every row of a list, never nil: an empty list shows [].
func each[T, V any](rows []T, view func(T) V) []V {
	out := make([]V, len(rows))
	for i, row := range rows {
		out[i] = view(row)
	}
	return out
}

// orNull shows an optional string that is not set as null rather than "".
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
