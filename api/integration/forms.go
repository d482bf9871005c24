package integration

import (
	"github.com/funnelhq/funnel/domain"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// listForms serves GET /api/v1/forms: id, name and fields of the account's forms, in creation order.
func (s *Server) listForms(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "forms", func(page paging.Page) ([]projections.Form, string, error) {
		return s.deps.Read.Forms.List(r.Context(), principalOf(r.Context()).accountID(), page)
	}, formView)
}

// getForm serves GET /api/v1/forms/{formId}.
func (s *Server) getForm(w http.ResponseWriter, r *http.Request) {
	form, err := s.deps.Read.Forms.Get(r.Context(), principalOf(r.Context()).accountID(), mux.Vars(r)["formId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.FormResponse{Success: true, Form: formView(form)})
}

// submitForm serves POST /api/v1/forms/{formId}/submissions with {"values": {fieldId: value}}.
func (s *Server) submitForm(w http.ResponseWriter, r *http.Request) {
	var req wire.SubmitFormRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.SubmitForm.Handle(r.Context(), commands.SubmitForm{
		Meta:   principalOf(r.Context()).meta(r),
		FormID: mux.Vars(r)["formId"],
		Values: req.Values,
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	// The answer is built from the write, as the read model holds it since the wait: reading the
	// row back cost a round trip per submission, the busiest write of a funnel. A request resumed
	// from a result an earlier release kept has no time in it: that one is read back.
	submission := projections.Submission{ID: res.SubmissionID, FormID: res.FormID, ContactID: res.ContactID, SubmittedAt: res.SubmittedAt}
	if res.SubmittedAt.IsZero() {
		var err error
		if submission, err = s.deps.Read.Submissions.Get(r.Context(), principalOf(r.Context()).accountID(), res.SubmissionID); err != nil {
			httpapi.Fail(w, r, err)
			return
		}
	}
	httpapi.Answer(w, http.StatusCreated, wire.SubmissionCreated{Success: true, Submission: submissionView(submission)})
}

// formRoutes registers the routes of forms and their submissions (Router, server.go).
func (s *Server) formRoutes(v1 routes) {
	v1.add(http.MethodGet, "/forms", domain.ScopeFormsRead, s.listForms)
	v1.add(http.MethodGet, "/forms/{formId}", domain.ScopeFormsRead, s.getForm)
	v1.add(http.MethodPost, "/forms/{formId}/submissions", domain.ScopeFormsWrite, s.submitForm)
}
