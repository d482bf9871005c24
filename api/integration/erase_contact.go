package integration

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
)

// eraseContact serves DELETE /api/v1/contacts/:contactId (contacts:erase): decisions.md
// "Erasure". The command returns once nothing of the person is left to read.
func (s *Server) eraseContact(w http.ResponseWriter, r *http.Request) {
	res, err := s.deps.Commands.EraseContact.Handle(r.Context(), commands.EraseContact{
		Meta: principalOf(r.Context()).meta(r), ContactID: mux.Vars(r)["contactId"],
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitWrite(w, r, s.deps.Runtime.ReadModels, res.Position, res.Types) {
		return
	}
	answer := wire.ErasureResponse{Success: true}
	answer.Erasure.ContactId, answer.Erasure.ErasedAt = res.ContactID, wire.At(res.ErasedAt)
	httpapi.Answer(w, http.StatusOK, answer)
}
