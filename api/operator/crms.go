package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// createCRM serves POST /admin/v1/accounts/{accountId}/crms {name, stages: [{name}]}.
func (s *Server) createCRM(w http.ResponseWriter, r *http.Request) {
	var req admin.CreateCrmRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	names := each(req.Stages, func(st admin.StageSpec) string { return st.Name })
	res, err := s.deps.Commands.CreateCRM.Handle(r.Context(), commands.CreateCRM{Meta: operatorMeta(r), Name: req.Name, StageNames: names})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	crm, err := s.deps.Read.CRMs.Get(r.Context(), accountOf(r).ID, res.CRMID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusCreated, admin.CRMResponse{Success: true, Crm: crmView(crm)})
}

// listCRMs serves GET /admin/v1/accounts/{accountId}/crms, in creation order.
func (s *Server) listCRMs(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	httpapi.WritePage(w, r, "crms", func(page paging.Page) ([]projections.CRM, string, error) {
		return s.deps.Read.CRMs.List(r.Context(), account.ID, page)
	}, crmView)
}

// listLeads serves GET /admin/v1/accounts/{accountId}/crms/{crmId}/leads?contactId=:
// the leads of one CRM of the account, in creation order, optionally of one contact.
func (s *Server) listLeads(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	crm, err := s.deps.Read.CRMs.Get(r.Context(), accountOf(r).ID, mux.Vars(r)["crmId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	filter := projections.LeadFilter{CRMID: crm.ID, ContactID: r.URL.Query().Get("contactId")}
	httpapi.WritePage(w, r, "leads", func(page paging.Page) ([]projections.Lead, string, error) {
		return s.deps.Read.Leads.List(r.Context(), account.ID, filter, page)
	}, leadView)
}

// crmRoutes registers the routes of CRM pipelines and their leads (Router, server.go).
func (s *Server) crmRoutes(admin routes) {
	admin(http.MethodPost, "/accounts/{accountId}/crms", s.createCRM)
	admin(http.MethodGet, "/accounts/{accountId}/crms", s.listCRMs)
	admin(http.MethodGet, "/accounts/{accountId}/crms/{crmId}/leads", s.listLeads)
}
