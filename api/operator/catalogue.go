package operator

import (
	"net/http"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// defineCustomField serves POST /admin/v1/accounts/{accountId}/custom-fields.
func (s *Server) defineCustomField(w http.ResponseWriter, r *http.Request) {
	var req admin.DefineCustomFieldRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.DefineCustomField.Handle(r.Context(), commands.DefineCustomField{Meta: operatorMeta(r), Name: req.Name})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	field, err := s.deps.Read.Accounts.CustomField(r.Context(), accountOf(r).ID, res.FieldID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusCreated, admin.CustomFieldResponse{Success: true, CustomField: customFieldView(field)})
}

// listCustomFields serves GET /admin/v1/accounts/{accountId}/custom-fields, in definition order.
func (s *Server) listCustomFields(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	httpapi.WritePage(w, r, "customFields", func(page paging.Page) ([]projections.CustomField, string, error) {
		return s.deps.Read.Accounts.CustomFields(r.Context(), account.ID, page)
	}, customFieldView)
}

// createTag serves POST /admin/v1/accounts/{accountId}/tags.
func (s *Server) createTag(w http.ResponseWriter, r *http.Request) {
	var req admin.CreateTagRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.CreateTag.Handle(r.Context(), commands.CreateTag{
		Meta: operatorMeta(r), Name: req.Name, Order: wire.Value(req.Order), Automations: automations(req.Automations),
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	tag, err := s.deps.Read.Tags.Get(r.Context(), accountOf(r).ID, res.TagID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusCreated, admin.TagResponse{Success: true, Tag: tagView(tag)})
}

// listTags serves GET /admin/v1/accounts/{accountId}/tags: every tag with its automations.
func (s *Server) listTags(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	httpapi.WritePage(w, r, "tags", func(page paging.Page) ([]projections.Tag, string, error) {
		return s.deps.Read.Tags.List(r.Context(), account.ID, page)
	}, tagView)
}

// catalogueRoutes registers the routes of custom fields and tags (Router, server.go).
func (s *Server) catalogueRoutes(admin routes) {
	admin(http.MethodPost, "/accounts/{accountId}/custom-fields", s.defineCustomField)
	admin(http.MethodGet, "/accounts/{accountId}/custom-fields", s.listCustomFields)
	admin(http.MethodPost, "/accounts/{accountId}/tags", s.createTag)
	admin(http.MethodGet, "/accounts/{accountId}/tags", s.listTags)
}
