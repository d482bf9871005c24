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

// action is the action a tag request asks for: add when left out.
func action(a *wire.TagAction) commands.TagAction {
	if a == nil || *a == "" {
		return commands.TagsAdd
	}
	return commands.TagAction(*a)
}

// outcome names the tag report member of an action.
func outcome(a commands.TagAction) string {
	if a == commands.TagsRemove {
		return "removed"
	}
	return "applied"
}

// tagContactByEmail serves POST /api/v1/contacts/tags.
func (s *Server) tagContactByEmail(w http.ResponseWriter, r *http.Request) {
	var req wire.TagContactByEmailRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.Email == nil {
		httpapi.WriteFieldError(w, "email", "email is required")
		return
	}
	s.changeTags(w, r, commands.ChangeContactTags{Email: *req.Email, FirstName: req.FirstName}, req)
}

// tagContactByID serves POST /api/v1/contacts/{contactId}/tags. Its body (TagContactRequest) is
// read as the one of POST /api/v1/contacts/tags, which adds email and firstName to it: this
// route ignores them, but has always refused them when they are not strings.
func (s *Server) tagContactByID(w http.ResponseWriter, r *http.Request) {
	var req wire.TagContactByEmailRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	s.changeTags(w, r, commands.ChangeContactTags{ContactID: mux.Vars(r)["contactId"]}, req)
}

func (s *Server) changeTags(w http.ResponseWriter, r *http.Request, cmd commands.ChangeContactTags, req wire.TagContactByEmailRequest) {
	cmd.Meta = principalOf(r.Context()).meta(r)
	cmd.Tags = domain.TagRequest{IDs: wire.Value(req.TagIds), Names: wire.Value(req.TagNames)}
	cmd.Action = action(req.Action)
	res, err := s.deps.Commands.ChangeContactTags.Handle(r.Context(), cmd)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	s.answerContact(w, r, res, cmd.Tags, outcome(cmd.Action))
}

// listTags serves GET /api/v1/tags.
func (s *Server) listTags(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "tags", func(page paging.Page) ([]projections.Tag, string, error) {
		return s.deps.Read.Tags.List(r.Context(), principalOf(r.Context()).accountID(), page)
	}, tagView)
}

// tagRoutes registers the routes of the tags of contacts and of the account (Router, server.go).
func (s *Server) tagRoutes(v1 routes) {
	v1.add(http.MethodPost, "/contacts/tags", domain.ScopeTagsWrite, s.tagContactByEmail)
	// Any other method on /contacts/tags would match /contacts/{contactId} with the id "tags".
	httpapi.RefuseOtherMethods(v1.router, "/api/v1/contacts/tags")
	v1.add(http.MethodPost, "/contacts/{contactId}/tags", domain.ScopeTagsWrite, s.tagContactByID)
	v1.add(http.MethodGet, "/tags", domain.ScopeTagsRead, s.listTags)
}
