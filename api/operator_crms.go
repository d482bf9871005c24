package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/paging"
	"github.com/funnelhq/funnel/projections"
)

// createCRM serves POST /admin/v1/accounts/{accountId}/crms {name, stages: [{name}]}.
func (s *Server) createCRM(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string `json:"name"`
		Stages []struct {
			Name string `json:"name"`
		} `json:"stages"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	names := make([]string, len(req.Stages))
	for i, st := range req.Stages {
		names[i] = st.Name
	}
	res, err := s.deps.Commands.CreateCRM.Handle(r.Context(), commands.CreateCRM{Meta: operatorMeta(r), Name: req.Name, StageNames: names})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	crm, err := s.deps.CRMs.CRM(r.Context(), res.CRMID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, object{"crm": crmView(crm)})
}

// listOperatorCRMs serves GET /admin/v1/accounts/{accountId}/crms, in creation order.
func (s *Server) listOperatorCRMs(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	writePage(s, w, r, "crms", func(page paging.Page) ([]projections.CRM, string, error) {
		return s.deps.CRMs.List(r.Context(), account.ID, page)
	}, crmView)
}

// listOperatorLeads serves GET /admin/v1/accounts/{accountId}/crms/{crmId}/leads?contactId=:
// the leads of one CRM of the account, in creation order, optionally of one contact.
func (s *Server) listOperatorLeads(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	crm, err := s.deps.CRMs.CRM(r.Context(), mux.Vars(r)["crmId"])
	if err != nil || crm.AccountID != account.ID {
		s.failOperatorLookup(w, r, "crm", err)
		return
	}
	filter := projections.LeadFilter{CRMID: crm.ID, ContactID: r.URL.Query().Get("contactId")}
	writePage(s, w, r, "leads", func(page paging.Page) ([]projections.Lead, string, error) {
		return s.deps.Leads.List(r.Context(), account.ID, filter, page)
	}, leadView)
}
