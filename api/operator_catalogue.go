package api

import (
	"net/http"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/paging"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/wireformat"
)

// defineCustomField serves POST /admin/v1/accounts/{accountId}/custom-fields.
func (s *Server) defineCustomField(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.DefineCustomField.Handle(r.Context(), commands.DefineCustomField{Meta: operatorMeta(r), Name: req.Name})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	fields, err := s.deps.Accounts.CustomFields(r.Context(), operatorMeta(r).AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, f := range fields {
		if f.ID == res.FieldID {
			writeJSON(w, http.StatusCreated, object{"customField": customFieldView(f)})
			return
		}
	}
	s.fail(w, r, projections.ErrNotFound)
}

func customFieldView(f projections.CustomField) object {
	return object{"id": f.ID, "name": f.Name, "createdAt": wireformat.Time(f.CreatedAt)}
}

// listCustomFields serves GET /admin/v1/accounts/{accountId}/custom-fields.
func (s *Server) listCustomFields(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	fields, err := s.deps.Accounts.CustomFields(r.Context(), account.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]object, len(fields))
	for i, f := range fields {
		views[i] = customFieldView(f)
	}
	writeJSON(w, http.StatusOK, object{"customFields": views})
}

// operatorTagView is a tag as the operator API shows it, with its automations.
func operatorTagView(t projections.Tag) object {
	view := tagView(t)
	view["automations"] = wireformat.List(t.Automations)
	return view
}

// createTag serves POST /admin/v1/accounts/{accountId}/tags.
func (s *Server) createTag(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name        string              `json:"name"`
		Order       int                 `json:"order"`
		Automations []domain.Automation `json:"automations"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.CreateTag.Handle(r.Context(), commands.CreateTag{Meta: operatorMeta(r), Name: req.Name, Order: req.Order, Automations: req.Automations})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	tag, err := s.deps.Tags.Tag(r.Context(), res.TagID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, object{"tag": operatorTagView(tag)})
}

// listOperatorTags serves GET /admin/v1/accounts/{accountId}/tags: every tag with its automations.
func (s *Server) listOperatorTags(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	writePage(s, w, r, "tags", func(page paging.Page) ([]projections.Tag, string, error) {
		return s.deps.Tags.List(r.Context(), account.ID, page)
	}, operatorTagView)
}
