package integration

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// listCustomers serves GET /api/v1/customers: the account's checkout customers, newest first,
// narrowed to one email (exact, case-insensitive) by ?email=.
func (s *Server) listCustomers(w http.ResponseWriter, r *http.Request) {
	filter := projections.CustomerFilter{Email: r.URL.Query().Get("email")}
	httpapi.WritePage(w, r, "customers", func(page paging.Page) ([]projections.Customer, string, error) {
		return s.deps.Read.Customers.List(r.Context(), principalOf(r.Context()).accountID(), filter, page)
	}, httpapi.CustomerView)
}

// getCustomer serves GET /api/v1/customers/{customerId}: a customer with its payments and
// subscriptions, oldest first.
func (s *Server) getCustomer(w http.ResponseWriter, r *http.Request) {
	customer, err := s.deps.Read.Customers.Get(r.Context(), principalOf(r.Context()).accountID(), mux.Vars(r)["customerId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	transactions, err := s.deps.Read.Transactions.OfCustomer(r.Context(), customer.ID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	subscriptions, err := s.deps.Read.BillingSubscriptions.OfCustomer(r.Context(), customer.ID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	view := httpapi.CustomerView(customer)
	view["transactions"] = views(transactions, httpapi.TransactionView)
	view["subscriptions"] = views(subscriptions, httpapi.BillingSubscriptionView)
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
