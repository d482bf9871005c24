package integration

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// Discovery (decisions.md "Discovery"): what an integrator needs to find the ids the other
// endpoints take, and to read back what it created.

// listCustomFields serves GET /api/v1/custom-fields: the ids customFields members take, in the
// order they were defined.
func (s *Server) listCustomFields(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "customFields", func(page paging.Page) ([]projections.CustomField, string, error) {
		return s.deps.Read.Accounts.CustomFields(r.Context(), principalOf(r.Context()).accountID(), page)
	}, func(f projections.CustomField) wire.CustomField { return wire.CustomField{Id: f.ID, Name: f.Name} })
}

// listLeads serves GET /api/v1/crms/{crmId}/leads: the CRM's leads, newest first. Another
// account's CRM is 403, an unknown one 404.
func (s *Server) listLeads(w http.ResponseWriter, r *http.Request) {
	account := principalOf(r.Context()).accountID()
	crm, err := s.deps.Read.CRMs.Get(r.Context(), account, mux.Vars(r)["crmId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.WritePage(w, r, "leads", func(page paging.Page) ([]projections.Lead, string, error) {
		return s.deps.Read.Leads.NewestInCRM(r.Context(), account, crm.ID, page)
	}, leadView)
}

// getLead serves GET /api/v1/crms/{crmId}/leads/{leadId}. Another account's lead is 403, a lead
// that exists nowhere 404; a lead of the account under another account's CRM is 403 too, as
// every other path naming that CRM is, and under another CRM of the account it is not found.
func (s *Server) getLead(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	account := principalOf(r.Context()).accountID()
	lead, err := s.deps.Read.Leads.Get(r.Context(), account, vars["leadId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if lead.CRMID != vars["crmId"] {
		if _, err := s.deps.Read.CRMs.Get(r.Context(), account, vars["crmId"]); err != nil && domain.KindOf(err) != domain.KindNotFound {
			httpapi.Fail(w, r, err) // another account's CRM: 403; the database failing: 5xx
			return
		}
		httpapi.WriteError(w, http.StatusNotFound, "lead not found in this crm")
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.LeadResponse{Success: true, Lead: leadView(lead)})
}
