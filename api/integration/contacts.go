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

// upsertContact serves POST /api/v1/contacts.
func (s *Server) upsertContact(w http.ResponseWriter, r *http.Request) {
	var req wire.UpsertContactRequest
	if !httpapi.DecodeChecked(w, r, &req, func() *httpapi.FieldError { return checkCustomFields(req.CustomFields) }) {
		return
	}
	if req.Email == nil {
		httpapi.WriteFieldError(w, "email", "email is required")
		return
	}
	p := principalOf(r.Context())
	tags := domain.TagRequest{IDs: wire.Value(req.TagIds), Names: wire.Value(req.TagNames)}
	res, err := s.deps.Commands.UpsertContact.Handle(r.Context(), commands.UpsertContact{
		Meta:  p.meta(r),
		Email: *req.Email,
		Profile: domain.ContactProfile{
			FirstName: req.FirstName, LastName: req.LastName, Phone: req.Phone,
			CustomFields: customFields(req.CustomFields),
		},
		Tags: tags,
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	s.answerContact(w, r, res, tags, "applied")
}

// answerContact waits for the read models and answers with the contact and the tag report.
func (s *Server) answerContact(w http.ResponseWriter, r *http.Request, res commands.ContactResult, requested domain.TagRequest, outcome string) {
	if !httpapi.AwaitWrite(w, r, s.deps.Runtime.ReadModels, res.Position, res.Types) {
		return
	}
	contact, err := s.deps.Read.Contacts.GetAt(r.Context(), principalOf(r.Context()).accountID(), res.ContactID, res.Position)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.ContactWritten{
		Success: true, Contact: contact.View(), Created: res.Created, Tags: tagReport(requested, res.Tags, outcome),
	})
}

// tagReport is the "tags" member of a contact write (integration-api.md section 4): what was
// requested, which of those resolved to tags, and, when tags were requested but none matched,
// the unmatched names and a warning. The resolved tags are always under "applied" (the action was
// applied to them), so that one parser reads every write; a remove lists them as "removed" too.
func tagReport(req domain.TagRequest, res domain.TagResolution, outcome string) wire.TagReport {
	resolved := wire.TagNamesAndIds{TagNames: []string{}, TagIds: []string{}}
	for _, t := range res.Tags {
		resolved.TagNames = append(resolved.TagNames, t.Name)
		resolved.TagIds = append(resolved.TagIds, t.ID)
	}
	report := wire.TagReport{
		Requested: wire.TagNamesAndIds{TagNames: wire.List(req.Names), TagIds: wire.List(req.IDs)},
		Applied:   resolved,
	}
	if outcome == "removed" {
		report.Removed = &resolved
	}
	if !req.Empty() && len(res.Tags) == 0 {
		unmatched := wire.List(res.UnmatchedNames)
		warning := "none of the requested tags exist in this account; no tags were " + outcome
		report.UnmatchedTagNames, report.Warning = &unmatched, &warning
	}
	return report
}

// getContact serves GET /api/v1/contacts/{contactId}.
func (s *Server) getContact(w http.ResponseWriter, r *http.Request) {
	contact, err := s.deps.Read.Contacts.Get(r.Context(), principalOf(r.Context()).accountID(), mux.Vars(r)["contactId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.ContactResponse{Success: true, Contact: contact.View()})
}

// listContacts serves GET /api/v1/contacts.
func (s *Server) listContacts(w http.ResponseWriter, r *http.Request) {
	filter := projections.ContactFilter{Email: r.URL.Query().Get("email")}
	httpapi.WriteDocumentPage(w, r, "contacts", func(page paging.Page) ([]string, string, error) {
		return s.deps.Read.Contacts.List(r.Context(), principalOf(r.Context()).accountID(), filter, page)
	})
}

// contactRoutes registers the routes of contacts and their custom fields (Router, server.go).
func (s *Server) contactRoutes(v1 routes) {
	v1.add(http.MethodGet, "/contacts", domain.ScopeContactsRead, s.listContacts)
	v1.add(http.MethodPost, "/contacts", domain.ScopeContactsWrite, s.upsertContact)
	v1.add(http.MethodGet, "/contacts/{contactId}", domain.ScopeContactsRead, s.getContact)
	v1.add(http.MethodDelete, "/contacts/{contactId}", domain.ScopeContactsErase, s.eraseContact)
	v1.add(http.MethodGet, "/custom-fields", domain.ScopeContactsRead, s.listCustomFields)
}
