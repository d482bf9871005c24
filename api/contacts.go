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

type upsertContactRequest struct {
	Email        *string           `json:"email"`
	FirstName    *string           `json:"firstName"`
	LastName     *string           `json:"lastName"`
	Phone        *string           `json:"phone"`
	TagIDs       []string          `json:"tagIds"`
	TagNames     []string          `json:"tagNames"`
	CustomFields map[string]scalar `json:"customFields"`
}

// upsertContact serves POST /api/v1/contacts.
func (s *Server) upsertContact(w http.ResponseWriter, r *http.Request) {
	var req upsertContactRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Email == nil {
		writeError(w, http.StatusBadRequest, "email is required")
		return
	}
	p := principalOf(r.Context())
	tags := domain.TagRequest{IDs: req.TagIDs, Names: req.TagNames}
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
		s.fail(w, r, err)
		return
	}
	s.answerContact(w, r, res, tags, "applied")
}

// answerContact waits for the read models and answers with the contact and the tag report.
func (s *Server) answerContact(w http.ResponseWriter, r *http.Request, res commands.ContactResult, requested domain.TagRequest, outcome string) {
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	contact, err := s.deps.Contacts.Contact(r.Context(), res.ContactID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, object{
		"contact": contactView(contact),
		"created": res.Created,
		"tags":    tagReport(requested, res.Tags, outcome),
	})
}

// tagReport is the "tags" member of a contact write (integration-api.md section 4): what was
// requested, which of those resolved to tags, and, when tags were requested but none matched,
// the unmatched names and a warning. The resolved tags are always under "applied" (the action was
// applied to them), so that one parser reads every write; a remove lists them as "removed" too.
func tagReport(req domain.TagRequest, res domain.TagResolution, outcome string) object {
	names, ids := []string{}, []string{}
	for _, t := range res.Tags {
		names = append(names, t.Name)
		ids = append(ids, t.ID)
	}
	resolved := object{"tagNames": names, "tagIds": ids}
	report := object{
		"requested": object{"tagNames": wireformat.List(req.Names), "tagIds": wireformat.List(req.IDs)},
		"applied":   resolved,
		outcome:     resolved,
	}
	if !req.Empty() && len(res.Tags) == 0 {
		report["unmatchedTagNames"] = wireformat.List(res.UnmatchedNames)
		report["warning"] = "none of the requested tags exist in this account; no tags were " + outcome
	}
	return report
}

func customFields(in map[string]scalar) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = string(v)
	}
	return out
}

// getContact serves GET /api/v1/contacts/{contactId}.
func (s *Server) getContact(w http.ResponseWriter, r *http.Request) {
	contact, err := s.deps.Contacts.Contact(r.Context(), mux.Vars(r)["contactId"])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if contact.AccountID != principalOf(r.Context()).key.AccountID {
		writeError(w, http.StatusForbidden, "contact belongs to another account")
		return
	}
	writeJSON(w, http.StatusOK, object{"contact": contactView(contact)})
}

// listContacts serves GET /api/v1/contacts.
func (s *Server) listContacts(w http.ResponseWriter, r *http.Request) {
	filter := projections.ContactFilter{Email: r.URL.Query().Get("email")}
	writePage(s, w, r, "contacts", func(page paging.Page) ([]projections.Contact, string, error) {
		return s.deps.Contacts.List(r.Context(), principalOf(r.Context()).key.AccountID, filter, page)
	}, contactView)
}
