package integration

import (
	"github.com/funnelhq/funnel/api/views"
	"github.com/funnelhq/funnel/domain"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// listCustomers serves GET /api/v1/customers: the account's checkout customers, newest first,
// narrowed to one email (exact, case-insensitive) by ?email=.
func (s *Server) listCustomers(w http.ResponseWriter, r *http.Request) {
	filter := projections.CustomerFilter{Email: r.URL.Query().Get("email")}
	httpapi.WritePage(w, r, "customers", func(page paging.Page) ([]projections.Customer, string, error) {
		return s.deps.Read.Customers.List(r.Context(), principalOf(r.Context()).accountID(), filter, page)
	}, views.Customer)
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
	httpapi.Answer(w, http.StatusOK, wire.CustomerResponse{Success: true, Customer: wire.CustomerDetail{
		Id: customer.ID, Email: customer.Email, Name: customer.Name, ContactId: customer.ContactID, CreatedAt: wire.At(customer.CreatedAt),
		Transactions: each(transactions, views.Transaction), Subscriptions: each(subscriptions, views.Subscription),
	}})
}

// customerRoutes registers the routes of checkout customers (Router, server.go).
func (s *Server) customerRoutes(v1 routes) {
	v1.add(http.MethodGet, "/customers", domain.ScopeCheckoutRead, s.listCustomers)
	v1.add(http.MethodGet, "/customers/{customerId}", domain.ScopeCheckoutRead, s.getCustomer)
}
