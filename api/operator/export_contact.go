package operator

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/domain"
)

// exportContact serves GET /admin/v1/accounts/{a}/contacts/{contactId}/export (decisions.md
// "Erasure and export": GDPR access and portability): every personal value held about the
// contact, from the log. The contact as the API shows it, then every event of its history and of
// its customers', activations' and billing subscriptions' streams (personal values opened,
// secrets redacted), in log order, and what those events recorded of it: its form submissions,
// bookings, leads (as they are now: currentState), and as a buyer its customers and transactions
// (with the status their refunds left). The streams of its customers and activations name the
// contact only in their first event, so their later ones (a customer's new name, an activation's
// externalUserId) are not in its history, nor are a subscription's start and renewals, which
// carry the sale's buyer: hence those streams are read too. An erased contact, or none: 404;
// another account's: 403.
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
	if events, err = s.withContactStreams(r.Context(), account.ID, contactID, events); err != nil {
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
	seenCustomers := map[string]int{}
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
	if err := s.currentState(r.Context(), account.ID, export); err != nil {
		httpapi.Fail(w, r, err)
		return
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

// withContactStreams adds to a contact's history the events of its customers', activations' and
// billing subscriptions' streams (StreamsOfContact, SubscriptionsOfContact) that it lacks, in log
// order. A stream whose first event names another contact is left out.
func (s *Server) withContactStreams(ctx context.Context, accountID, contactID string, history []domain.Recorded) ([]domain.Recorded, error) {
	streams, err := s.deps.History.StreamsOfContact(ctx, accountID, contactID)
	if err != nil {
		return nil, err
	}
	subscriptions, err := s.deps.History.SubscriptionsOfContact(ctx, accountID, contactID)
	if err != nil {
		return nil, err
	}
	streams = append(streams, subscriptions...)
	if len(streams) == 0 {
		return history, nil
	}
	have := make(map[int64]bool, len(history))
	for _, e := range history {
		have[e.Position] = true
	}
	all := history
	for _, id := range streams {
		events, err := s.deps.History.ReadStream(ctx, id)
		if err != nil {
			return nil, err
		}
		if len(events) == 0 || events[0].Metadata.AccountID != accountID {
			continue
		}
		first, err := events[0].Decode()
		if err != nil {
			return nil, err
		}
		if owner, ok := first.(domain.PersonalEvent); !ok || owner.Person() != contactID {
			continue
		}
		for _, e := range events {
			if !have[e.Position] {
				have[e.Position] = true
				all = append(all, e)
			}
		}
	}
	slices.SortFunc(all, func(a, b domain.Recorded) int { return cmp.Compare(a.Position, b.Position) })
	return all, nil
}

// exportEvent adds what one of the contact's events recorded of it to the export.
func exportEvent(x *admin.ContactExport, seenCustomers map[string]int, e domain.Event) {
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
	case domain.CheckoutRefunded:
		exportRefund(x, e.Sale.Transaction)
	case domain.CustomerCreated:
		exportCustomer(x, seenCustomers, admin.ExportedCustomer{Id: e.CustomerID, Email: e.Email, Name: e.Name})
	case domain.CustomerRenamed:
		if i, ok := seenCustomers[e.CustomerID]; ok {
			x.Customers[i].Name = e.Name
		}
	}
}

// exportCustomer adds a customer of the contact, the first time it is met.
func exportCustomer(x *admin.ContactExport, seenCustomers map[string]int, c admin.ExportedCustomer) {
	if _, ok := seenCustomers[c.Id]; !ok {
		seenCustomers[c.Id] = len(x.Customers)
		x.Customers = append(x.Customers, c)
	}
}

// exportSale adds a payment of the contact, and its customer the first time (as the sale shows
// it; the customer's own events, read first in log order, show it as it was created and renamed).
func exportSale(x *admin.ContactExport, seenCustomers map[string]int, customerID string, s domain.Sale) {
	exportCustomer(x, seenCustomers, admin.ExportedCustomer{Id: customerID, Email: s.Customer.Email, Name: s.Customer.Name})
	x.Transactions = append(x.Transactions, admin.ExportedTransaction{Id: s.Transaction.ID, CustomerId: customerID, ProductId: s.Product.ID,
		Amount: s.Transaction.Amount, Currency: s.Transaction.Currency, Status: s.Transaction.Status})
}

// exportRefund gives a payment of the export the status its refund left it in, so that the
// export says what GET /api/v1/customers/{id} says of it (refunded, partially_refunded) and not
// the "succeeded" it was paid with. The refund follows its payment in log order.
func exportRefund(x *admin.ContactExport, t domain.SaleTransaction) {
	for i := range x.Transactions {
		if x.Transactions[i].Id == t.ID {
			x.Transactions[i].Status = t.Status
		}
	}
}
