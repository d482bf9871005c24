package operator

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
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
	var answer admin.ContactExportResponse
	answer.Success = true
	export := &answer.Export
	export.Contact = contact.View()
	export.Events = make([]admin.ExportedEvent, 0, len(events))
	export.Submissions, export.Bookings, export.Leads = []admin.ExportedSubmission{}, []admin.ExportedBooking{}, []admin.ExportedLead{}
	export.Customers, export.Transactions = []admin.ExportedCustomer{}, []admin.ExportedTransaction{}
	seenCustomers := map[string]bool{}
	for i := range events {
		if err := redact(&events[i]); err != nil {
			httpapi.Fail(w, r, err)
			return
		}
		e := events[i]
		export.Events = append(export.Events, admin.ExportedEvent{Position: e.Position, Type: e.Type, OccurredAt: wire.At(e.OccurredAt), Data: json.RawMessage(e.Data)})
		decoded, err := e.Decode()
		if err != nil {
			httpapi.Fail(w, r, err)
			return
		}
		exportEvent(export, seenCustomers, decoded)
	}
	httpapi.Answer(w, http.StatusOK, answer)
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

// exportEvent adds what one of the contact's events recorded of it to the export.
func exportEvent(x *admin.ContactExport, seenCustomers map[string]bool, e domain.Event) {
	switch e := e.(type) {
	case domain.FormSubmitted:
		fields := make([]admin.ExportedAnswer, 0, len(e.Fields))
		for _, f := range e.Fields {
			fields = append(fields, admin.ExportedAnswer{Id: f.ID, Label: f.Label, Value: f.Value})
		}
		x.Submissions = append(x.Submissions, admin.ExportedSubmission{Id: e.SubmissionID, FormId: e.FormID, SubmittedAt: wire.At(e.SubmittedAt), Fields: fields})
	case domain.BookingCreated:
		x.Bookings = append(x.Bookings, admin.ExportedBooking{Id: e.BookingID, EventTypeId: e.CalendarID, StartTime: wire.At(e.StartTime),
			EndTime: wire.At(e.EndTime), Answers: wire.Object(e.Answers), ContactFields: wire.Object(e.ContactFields)})
	case domain.LeadCreated:
		x.Leads = append(x.Leads, admin.ExportedLead{Id: e.LeadID, CrmId: e.CRMID, StageId: e.StageID, Title: e.Title})
	case domain.CheckoutPurchased:
		exportSale(x, seenCustomers, e.CustomerID, e.Sale)
	case domain.CheckoutRebilled:
		exportSale(x, seenCustomers, e.CustomerID, e.Sale)
	}
}

// exportSale adds a payment of the contact, and its customer the first time.
func exportSale(x *admin.ContactExport, seenCustomers map[string]bool, customerID string, s domain.Sale) {
	if !seenCustomers[customerID] {
		seenCustomers[customerID] = true
		x.Customers = append(x.Customers, admin.ExportedCustomer{Id: customerID, Email: s.Customer.Email, Name: s.Customer.Name})
	}
	x.Transactions = append(x.Transactions, admin.ExportedTransaction{Id: s.Transaction.ID, CustomerId: customerID, ProductId: s.Product.ID,
		Amount: s.Transaction.Amount, Currency: s.Transaction.Currency, Status: s.Transaction.Status})
}
