package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// createForm serves POST /admin/v1/accounts/{accountId}/forms {name, fields, tagIds?}.
func (s *Server) createForm(w http.ResponseWriter, r *http.Request) {
	var req admin.CreateFormRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.CreateForm.Handle(r.Context(), commands.CreateForm{
		Meta: operatorMeta(r), Name: req.Name, Fields: fieldSpecs(req.Fields), TagIDs: wire.Value(req.TagIds),
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	form, err := s.deps.Read.Forms.Get(r.Context(), accountOf(r).ID, res.FormID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusCreated, admin.FormResponse{Success: true, Form: formView(form)})
}

// listForms serves GET /admin/v1/accounts/{accountId}/forms, in creation order.
func (s *Server) listForms(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	httpapi.WritePage(w, r, "forms", func(page paging.Page) ([]projections.Form, string, error) {
		return s.deps.Read.Forms.List(r.Context(), account.ID, page)
	}, formView)
}

// listSubmissions serves GET /admin/v1/accounts/{accountId}/forms/{formId}/submissions:
// the form's submissions with their answers, in the order they were made.
func (s *Server) listSubmissions(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	form, err := s.deps.Read.Forms.Get(r.Context(), accountOf(r).ID, mux.Vars(r)["formId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.WritePage(w, r, "submissions", func(page paging.Page) ([]projections.Submission, string, error) {
		return s.deps.Read.Submissions.List(r.Context(), account.ID, form.ID, page)
	}, submissionView)
}

// formRoutes registers the routes of forms and their submissions (Router, server.go).
func (s *Server) formRoutes(admin routes) {
	admin(http.MethodPost, "/accounts/{accountId}/forms", s.createForm)
	admin(http.MethodGet, "/accounts/{accountId}/forms", s.listForms)
	admin(http.MethodGet, "/accounts/{accountId}/forms/{formId}/submissions", s.listSubmissions)
}
