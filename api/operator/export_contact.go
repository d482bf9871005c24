package operator

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// exportContact serves GET /admin/v1/accounts/{a}/contacts/{contactId}/export (decisions.md
// "Erasure and export": GDPR access and portability): every personal value held about the
// contact, from the log. The contact as the API shows it, then every event of its history
// (personal values opened, secrets redacted), and what those events recorded of it: its form
// submissions, bookings, leads, and as a buyer its customers and transactions. An erased
// contact, or none: 404; another account's: 403.
func (s *Server) exportContact(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	contactID := mux.Vars(r)["contactId"]
	contact, err := s.deps.Read.Contacts.Get(r.Context(), account.ID, contactID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	events, err := s.wholeContactHistory(r.Context(), account.ID, contactID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	export := contactExport{submissions: []httpapi.Object{}, bookings: []httpapi.Object{}, leads: []httpapi.Object{},
		customers: []httpapi.Object{}, transactions: []httpapi.Object{}, seenCustomers: map[string]bool{}}
	eventViews := make([]httpapi.Object, 0, len(events))
	for i := range events {
		if err := redact(&events[i]); err != nil {
			httpapi.Fail(w, r, err)
			return
		}
		e := events[i]
		eventViews = append(eventViews, httpapi.Object{"position": e.Position, "type": e.Type, "occurredAt": wire.Time(e.OccurredAt), "data": json.RawMessage(e.Data)})
		decoded, err := e.Decode()
		if err != nil {
			httpapi.Fail(w, r, err)
			return
		}
		export.add(decoded)
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{"export": httpapi.Object{
		"contact": contact.View(), "events": eventViews, "submissions": export.submissions, "bookings": export.bookings,
		"leads": export.leads, "customers": export.customers, "transactions": export.transactions,
	}})
}

// wholeContactHistory reads every event of a contact's history, a page at a time.
func (s *Server) wholeContactHistory(ctx context.Context, accountID, contactID string) ([]domain.Recorded, error) {
	const page = 500
	var all []domain.Recorded
	var after int64
	for {
		events, err := s.deps.History.ReadContactHistory(ctx, accountID, contactID, after, page)
		if err != nil {
			return nil, err
		}
		all = append(all, events...)
		if len(events) < page {
			return all, nil
		}
		after = events[len(events)-1].Position
	}
}

// contactExport gathers what a contact's events recorded of it.
type contactExport struct {
	submissions, bookings, leads, customers, transactions []httpapi.Object
	seenCustomers                                         map[string]bool
}

func (x *contactExport) add(e domain.Event) {
	switch e := e.(type) {
	case domain.FormSubmitted:
		fields := make([]httpapi.Object, 0, len(e.Fields))
		for _, f := range e.Fields {
			fields = append(fields, httpapi.Object{"id": f.ID, "label": f.Label, "value": f.Value})
		}
		x.submissions = append(x.submissions, httpapi.Object{"id": e.SubmissionID, "formId": e.FormID, "submittedAt": wire.Time(e.SubmittedAt), "fields": fields})
	case domain.BookingCreated:
		x.bookings = append(x.bookings, httpapi.Object{"id": e.BookingID, "eventTypeId": e.CalendarID, "startTime": wire.Time(e.StartTime),
			"endTime": wire.Time(e.EndTime), "answers": nonNil(e.Answers), "contactFields": nonNil(e.ContactFields)})
	case domain.LeadCreated:
		x.leads = append(x.leads, httpapi.Object{"id": e.LeadID, "crmId": e.CRMID, "stageId": e.StageID, "title": e.Title})
	case domain.CheckoutPurchased:
		x.sale(e.CustomerID, e.Sale)
	case domain.CheckoutRebilled:
		x.sale(e.CustomerID, e.Sale)
	}
}

// sale records a payment of the contact, and its customer the first time.
func (x *contactExport) sale(customerID string, s domain.Sale) {
	if !x.seenCustomers[customerID] {
		x.seenCustomers[customerID] = true
		x.customers = append(x.customers, httpapi.Object{"id": customerID, "email": s.Customer.Email, "name": s.Customer.Name})
	}
	x.transactions = append(x.transactions, httpapi.Object{"id": s.Transaction.ID, "customerId": customerID, "productId": s.Product.ID,
		"amount": s.Transaction.Amount, "currency": s.Transaction.Currency, "status": s.Transaction.Status})
}

// nonNil is m, or an empty map for nil: the wire shows {} rather than null.
func nonNil[M ~map[string]any](m M) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
