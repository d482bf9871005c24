package httpapi

import (
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// The views below are the operator API's resources (the integration API answers the generated
// wire types, api/integration/views.go); the operator API adds members to some of them (a tag's
// automations, a form's tags, a booking's answers, a webhook's kind and status).

// TagView is a tag: id, name, order and when it was created.
func TagView(t projections.Tag) Object {
	return Object{"id": t.ID, "name": t.Name, "order": t.Order, "createdAt": wire.Time(t.CreatedAt)}
}

// CRMJSON is a CRM pipeline as both APIs show it, a struct (no map to encode) in the spec's order.
type CRMJSON struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Stages    []domain.Stage `json:"stages"` // id, name, order
	CreatedAt string         `json:"createdAt"`
}

// CRMView is a CRM pipeline with its stages in order.
func CRMView(c projections.CRM) CRMJSON {
	return CRMJSON{ID: c.ID, Name: c.Name, Stages: wire.List(c.Stages), CreatedAt: wire.Time(c.CreatedAt)}
}

// LeadJSON is a lead as both APIs show it, a struct (no map to encode) in the spec's order;
// amount is in minor units of the account's currency.
type LeadJSON struct {
	ID        string `json:"id"`
	CRMID     string `json:"crmId"`
	StageID   string `json:"stageId"`
	ContactID string `json:"contactId"`
	Title     string `json:"title"`
	Amount    int64  `json:"amount"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

// LeadView is a lead.
func LeadView(l projections.Lead) LeadJSON {
	return LeadJSON{
		ID: l.ID, CRMID: l.CRMID, StageID: l.StageID, ContactID: l.ContactID, Title: l.Title, Amount: l.Amount,
		CreatedAt: wire.Time(l.CreatedAt), UpdatedAt: wire.Time(l.UpdatedAt),
	}
}

// fieldViews are form fields or booking questions; contactField is null for an answer that
// goes nowhere on the contact.
func fieldViews(fields []domain.Field) []Object {
	out := make([]Object, len(fields))
	for i, f := range fields {
		out[i] = Object{"id": f.ID, "label": f.Label, "type": f.Type, "contactField": wire.OrNull(f.ContactField), "required": f.Required}
	}
	return out
}

// FormView is a form with its fields in order.
func FormView(f projections.Form) Object {
	return Object{"id": f.ID, "name": f.Name, "fields": fieldViews(f.Fields), "createdAt": wire.Time(f.CreatedAt)}
}

// SubmissionView is a form submission; contactId is null when no answer gave an email.
func SubmissionView(s projections.Submission) Object {
	return Object{"id": s.ID, "formId": s.FormID, "submittedAt": wire.Time(s.SubmittedAt), "contactId": wire.OrNull(s.ContactID)}
}

// EventTypeView is a calendar with its questions in order.
func EventTypeView(t projections.Calendar) Object {
	return Object{
		"id": t.ID, "name": t.Name, "durationMinutes": t.DurationMinutes, "meetingUrl": wire.OrNull(t.MeetingURL),
		"questions": fieldViews(t.Questions), "createdAt": wire.Time(t.CreatedAt),
	}
}

// BookingView is a booking: when it starts and ends, where it happens, and whose it is.
func BookingView(b projections.Booking) Object {
	return Object{
		"id": b.ID, "eventTypeId": b.CalendarID, "when": wire.Time(b.StartTime), "endTime": wire.Time(b.EndTime),
		"meetingUrl": wire.OrNull(b.MeetingURL), "contactId": wire.OrNull(b.ContactID),
	}
}

// SubscriptionView is a webhook subscription as the REST Hook API shows it.
func SubscriptionView(s webhooks.Subscription) Object {
	return Object{"id": s.ID, "url": s.URL, "events": wire.List(s.Events), "filters": filtersView(s.Filters), "createdAt": wire.Time(s.CreatedAt)}
}

func filtersView(f domain.WebhookFilters) Object {
	return Object{"formIds": wire.List(f.FormIDs), "eventTypeIds": wire.List(f.CalendarIDs), "productIds": wire.List(f.ProductIDs),
		"pricingTierIds": wire.List(f.PricingTierIDs), "bumpIds": wire.List(f.BumpIDs)}
}

// ProductView is a checkout product as integrators see it: what a checkout integration needs to
// show and map purchases (its pricing tiers and bumps, by index, with their stable ids, and whether
// purchases forward a SaaS signup). The signup page a saas_signup product sends buyers to is the
// operator's configuration: the operator API adds it.
func ProductView(p projections.Product) Object {
	tiers := make([]Object, len(p.PricingTiers))
	for i, t := range p.PricingTiers {
		tiers[i] = Object{"id": t.ID, "index": t.Index, "name": t.Name, "amount": t.Amount, "currency": t.Currency, "interval": t.Interval}
		if t.Interval == domain.IntervalSplit {
			tiers[i]["installments"] = t.Installments
		}
	}
	bumps := make([]Object, len(p.Bumps))
	for i, b := range p.Bumps {
		bumps[i] = Object{"id": b.ID, "index": b.Index, "name": b.Name, "amount": b.Amount}
	}
	return Object{
		"id": p.ID, "name": p.Name, "internalName": p.InternalName, "forwarding": p.Forwarding,
		"pricingTiers": tiers, "bumps": bumps, "createdAt": wire.Time(p.CreatedAt),
	}
}

// CustomerView is a checkout customer: the email as its first purchase spelt it, the name its
// latest purchase gave ("" when none did) and its contact.
func CustomerView(c projections.Customer) Object {
	return Object{"id": c.ID, "email": c.Email, "name": c.Name, "contactId": c.ContactID, "createdAt": wire.Time(c.CreatedAt)}
}

// TransactionView is a payment, named as the transaction member of the checkout.* webhooks
// names it, plus what was bought and how much was refunded.
func TransactionView(t projections.Transaction) Object {
	return Object{
		"id": t.ID, "txnId": t.TxnID, "amount": t.Amount, "currency": t.Currency, "status": t.Status, "processor": t.Processor,
		"subscriptionId": wire.OrNull(t.SubscriptionID), "isRebill": t.Kind == projections.TransactionRebill,
		"productId": t.ProductID, "pricingTierId": t.PricingTierID, "bumpIds": wire.List(t.BumpIDs),
		"refundedAmount": t.Refunded, "paidAt": wire.Time(t.PaidAt),
	}
}

// BillingSubscriptionView is a subscription, named as the subscription member of the checkout.*
// webhooks names it; cancelledAt and completedAt are null until it ends so.
func BillingSubscriptionView(s projections.BillingSubscription) Object {
	view := Object{
		"id": s.ID, "status": s.Status, "processor": s.Processor, "cancelAtPeriodEnd": s.CancelAtPeriodEnd,
		"currentPeriodEnd": wire.Time(s.CurrentPeriodEnd), "productId": s.ProductID, "pricingTierId": s.PricingTierID,
		"interval": s.Interval, "installments": nil, "payments": s.Payments, "amount": s.Amount, "currency": s.Currency,
		"startedAt": wire.Time(s.StartedAt), "cancelledAt": nil, "completedAt": nil,
	}
	if s.Interval == domain.IntervalSplit {
		view["installments"] = s.Installments
	}
	switch s.Status {
	case domain.SubscriptionStatusCancelled:
		view["cancelledAt"] = wire.Time(s.EndedAt)
	case domain.SubscriptionStatusCompleted:
		view["completedAt"] = wire.Time(s.EndedAt)
	}
	return view
}
