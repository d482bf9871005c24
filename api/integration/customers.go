package integration

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/paging"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/wireformat"
)

// listCustomers serves GET /api/v1/customers: the account's checkout customers, newest first,
// narrowed to one email (exact, case-insensitive) by ?email=.
func (s *Server) listCustomers(w http.ResponseWriter, r *http.Request) {
	filter := projections.CustomerFilter{Email: r.URL.Query().Get("email")}
	httpapi.WritePage(w, r, "customers", func(page paging.Page) ([]projections.Customer, string, error) {
		return s.deps.Customers.List(r.Context(), principalOf(r.Context()).accountID(), filter, page)
	}, customerView)
}

// getCustomer serves GET /api/v1/customers/{customerId}: a customer with its payments and
// subscriptions, oldest first.
func (s *Server) getCustomer(w http.ResponseWriter, r *http.Request) {
	customer, err := s.deps.Customers.Customer(r.Context(), mux.Vars(r)["customerId"])
	if !owned(w, r, "customer", customer.AccountID, err) {
		return
	}
	transactions, err := s.deps.Transactions.OfCustomer(r.Context(), customer.ID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	subscriptions, err := s.deps.CheckoutSubscriptions.OfCustomer(r.Context(), customer.ID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	view := customerView(customer)
	view["transactions"] = views(transactions, transactionView)
	view["subscriptions"] = views(subscriptions, subscriptionView)
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{"customer": view})
}

// views shows each row of a list.
func views[T any](rows []T, view func(T) httpapi.Object) []httpapi.Object {
	out := make([]httpapi.Object, len(rows))
	for i, row := range rows {
		out[i] = view(row)
	}
	return out
}

// customerView is a checkout customer: the email as its first purchase spelt it, the name its
// latest purchase gave ("" when none did) and its contact.
func customerView(c projections.Customer) httpapi.Object {
	return httpapi.Object{"id": c.ID, "email": c.Email, "name": c.Name, "contactId": c.ContactID, "createdAt": wireformat.Time(c.CreatedAt)}
}

// transactionView is a payment, named as the transaction member of the checkout.* webhooks
// names it, plus what was bought and how much was refunded.
func transactionView(t projections.Transaction) httpapi.Object {
	return httpapi.Object{
		"id": t.ID, "txnId": t.TxnID, "amount": t.Amount, "currency": t.Currency, "status": t.Status, "processor": t.Processor,
		"subscriptionId": wireformat.OrNull(t.SubscriptionID), "isRebill": t.Kind == projections.TransactionRebill,
		"productId": t.ProductID, "pricingTierId": t.PricingTierID, "bumpIds": wireformat.List(t.BumpIDs),
		"refundedAmount": t.Refunded, "paidAt": wireformat.Time(t.PaidAt),
	}
}

// subscriptionView is a subscription, named as the subscription member of the checkout.*
// webhooks names it; cancelledAt and completedAt are null until it ends so.
func subscriptionView(s projections.Subscription) httpapi.Object {
	view := httpapi.Object{
		"id": s.ID, "status": s.Status, "processor": s.Processor, "cancelAtPeriodEnd": s.CancelAtPeriodEnd,
		"currentPeriodEnd": wireformat.Time(s.CurrentPeriodEnd), "productId": s.ProductID, "pricingTierId": s.PricingTierID,
		"interval": s.Interval, "installments": nil, "payments": s.Payments, "amount": s.Amount, "currency": s.Currency,
		"startedAt": wireformat.Time(s.StartedAt), "cancelledAt": nil, "completedAt": nil,
	}
	if s.Interval == domain.IntervalSplit {
		view["installments"] = s.Installments
	}
	switch s.Status {
	case domain.SubscriptionStatusCancelled:
		view["cancelledAt"] = wireformat.Time(s.EndedAt)
	case domain.SubscriptionStatusCompleted:
		view["completedAt"] = wireformat.Time(s.EndedAt)
	}
	return view
}
