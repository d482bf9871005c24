package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/paging"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/wireformat"
)

// fieldSpec is a form field or a booking question as the operator defines it.
type fieldSpec struct {
	Label        string `json:"label"`
	Type         string `json:"type"`
	ContactField string `json:"contactField"`
	Required     bool   `json:"required"`
}

func fieldSpecs(in []fieldSpec) []domain.FieldSpec {
	out := make([]domain.FieldSpec, len(in))
	for i, f := range in {
		out[i] = domain.FieldSpec{Label: f.Label, Type: f.Type, ContactField: f.ContactField, Required: f.Required}
	}
	return out
}

// operatorFormView is a form as the operator API shows it, with the tags its submissions apply.
func operatorFormView(f projections.Form) object {
	view := formView(f)
	view["tagIds"] = wireformat.List(f.TagIDs)
	return view
}

// createForm serves POST /admin/v1/accounts/{accountId}/forms {name, fields, tagIds?}.
func (s *Server) createForm(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string      `json:"name"`
		Fields []fieldSpec `json:"fields"`
		TagIDs []string    `json:"tagIds"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.CreateForm.Handle(r.Context(), commands.CreateForm{
		Meta: operatorMeta(r), Name: req.Name, Fields: fieldSpecs(req.Fields), TagIDs: req.TagIDs,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	form, err := s.deps.Forms.Form(r.Context(), res.FormID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, object{"form": operatorFormView(form)})
}

// listOperatorForms serves GET /admin/v1/accounts/{accountId}/forms, in creation order.
func (s *Server) listOperatorForms(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	writePage(s, w, r, "forms", func(page paging.Page) ([]projections.Form, string, error) {
		return s.deps.Forms.List(r.Context(), account.ID, page)
	}, operatorFormView)
}

// listOperatorSubmissions serves GET /admin/v1/accounts/{accountId}/forms/{formId}/submissions:
// the form's submissions with their answers, in the order they were made.
func (s *Server) listOperatorSubmissions(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	form, err := s.deps.Forms.Form(r.Context(), mux.Vars(r)["formId"])
	if err != nil || form.AccountID != account.ID {
		s.failOperatorLookup(w, r, "form", err)
		return
	}
	writePage(s, w, r, "submissions", func(page paging.Page) ([]projections.Submission, string, error) {
		return s.deps.Submissions.List(r.Context(), account.ID, form.ID, page)
	}, func(sub projections.Submission) object {
		view := submissionView(sub)
		view["values"] = sub.Answers
		return view
	})
}
