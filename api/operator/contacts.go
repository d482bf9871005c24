package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// listContacts serves GET /admin/v1/accounts/{accountId}/contacts?email=: the account's
// contacts, newest first, as the integration API shows them (the console's contact search: an
// exact email, case-insensitive, through the read model's email index).
func (s *Server) listContacts(w http.ResponseWriter, r *http.Request) {
	filter := projections.ContactFilter{Email: r.URL.Query().Get("email")}
	httpapi.WriteDocumentPage(w, r, "contacts", func(page paging.Page) ([]string, string, error) {
		return s.deps.Read.Contacts.List(r.Context(), accountOf(r).ID, filter, page)
	})
}

// contactLeadsShown bounds the leads a contact's page shows: a contact has one lead per CRM at
// most, and an account has few CRMs.
const contactLeadsShown = 200

// getContact serves GET /admin/v1/accounts/{accountId}/contacts/{contactId}: the contact as the
// integration API shows it, with its leads (leads) and its checkout customers (each with its payments and
// billing subscriptions), all from the read models: what the console shows beside a timeline.
func (s *Server) getContact(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	contact, err := s.deps.Read.Contacts.Get(r.Context(), account.ID, mux.Vars(r)["contactId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	leads, _, err := s.deps.Read.Leads.List(r.Context(), account.ID, projections.LeadFilter{ContactID: contact.ID}, paging.Page{Limit: contactLeadsShown})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	customers, err := s.deps.Read.Customers.OfContact(r.Context(), account.ID, contact.ID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	purchases := make([]admin.ContactCustomer, len(customers))
	for i, c := range customers {
		transactions, err := s.deps.Read.Transactions.OfCustomer(r.Context(), c.ID)
		if err != nil {
			httpapi.Fail(w, r, err)
			return
		}
		subscriptions, err := s.deps.Read.BillingSubscriptions.OfCustomer(r.Context(), c.ID)
		if err != nil {
			httpapi.Fail(w, r, err)
			return
		}
		purchases[i] = contactCustomerView(c, transactions, subscriptions)
	}
	httpapi.Answer(w, http.StatusOK, admin.ContactDetail{Success: true, Contact: contactDetailView(contact.View(), leads, purchases)})
}

// contactRoutes registers the routes of contacts, their erasure and their export (Router, server.go).
func (s *Server) contactRoutes(admin routes) {
	admin(http.MethodGet, "/accounts/{accountId}/contacts", s.listContacts)
	admin(http.MethodGet, "/accounts/{accountId}/contacts/{contactId}", s.getContact)
	admin(http.MethodPost, "/accounts/{accountId}/contacts/{contactId}/erase", s.eraseContact)
	admin(http.MethodGet, "/accounts/{accountId}/contacts/{contactId}/export", s.exportContact)
}
