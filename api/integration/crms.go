package integration

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// listCRMs serves GET /api/v1/crms: the account's pipelines with their stages, in creation order.
func (s *Server) listCRMs(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "crms", func(page paging.Page) ([]projections.CRM, string, error) {
		return s.deps.Read.CRMs.List(r.Context(), principalOf(r.Context()).accountID(), page)
	}, crmView)
}

// listStages serves GET /api/v1/crms/{crmId}/stages, in pipeline order.
func (s *Server) listStages(w http.ResponseWriter, r *http.Request) {
	crm, err := s.deps.Read.CRMs.Get(r.Context(), principalOf(r.Context()).accountID(), mux.Vars(r)["crmId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.WritePage(w, r, "stages", func(page paging.Page) ([]domain.Stage, string, error) {
		return s.deps.Read.CRMs.Stages(r.Context(), crm.ID, page)
	}, stageView)
}

// createLead serves POST /api/v1/crms/{crmId}/leads: it opens a lead and upserts its contact.
func (s *Server) createLead(w http.ResponseWriter, r *http.Request) {
	var req wire.CreateLeadRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.ContactEmail == nil {
		httpapi.WriteFieldError(w, "contactEmail", "contactEmail is required")
		return
	}
	res, err := s.deps.Commands.CreateLead.Handle(r.Context(), commands.CreateLead{
		Meta:         principalOf(r.Context()).meta(r),
		CRMID:        mux.Vars(r)["crmId"],
		StageID:      req.StageId,
		Title:        req.Title,
		ContactEmail: *req.ContactEmail,
		FirstName:    req.FirstName,
		Tags:         domain.TagRequest{IDs: wire.Value(req.TagIds)},
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	lead, err := s.deps.Read.Leads.Get(r.Context(), principalOf(r.Context()).accountID(), res.LeadID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	contact, err := s.deps.Read.Contacts.Get(r.Context(), principalOf(r.Context()).accountID(), res.ContactID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusCreated, wire.LeadCreated{Success: true, Lead: leadView(lead), Contact: contact.View()})
}

// updateLead serves PATCH /api/v1/crms/{crmId}/leads/{leadId}: title, stage or amount.
func (s *Server) updateLead(w http.ResponseWriter, r *http.Request) {
	var req wire.UpdateLeadRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	vars := mux.Vars(r)
	res, err := s.deps.Commands.UpdateLead.Handle(r.Context(), commands.UpdateLead{
		Meta:    principalOf(r.Context()).meta(r),
		CRMID:   vars["crmId"],
		LeadID:  vars["leadId"],
		Title:   req.Title,
		StageID: req.StageId,
		Amount:  req.Amount,
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	lead, err := s.deps.Read.Leads.Get(r.Context(), principalOf(r.Context()).accountID(), vars["leadId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.LeadResponse{Success: true, Lead: leadView(lead)})
}

// crmRoutes registers the routes of CRM pipelines and their leads (Router, server.go).
func (s *Server) crmRoutes(v1 routes) {
	v1.add(http.MethodGet, "/crms", domain.ScopeCRMRead, s.listCRMs)
	v1.add(http.MethodGet, "/crms/{crmId}/stages", domain.ScopeCRMRead, s.listStages)
	v1.add(http.MethodGet, "/crms/{crmId}/leads", domain.ScopeCRMRead, s.listLeads)
	v1.add(http.MethodPost, "/crms/{crmId}/leads", domain.ScopeCRMWrite, s.createLead)
	v1.add(http.MethodGet, "/crms/{crmId}/leads/{leadId}", domain.ScopeCRMRead, s.getLead)
	v1.add(http.MethodPatch, "/crms/{crmId}/leads/{leadId}", domain.ScopeCRMWrite, s.updateLead)
}
