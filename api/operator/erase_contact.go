package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
)

// eraseContact serves POST /admin/v1/accounts/{a}/contacts/{contactId}/erase: as the
// integration API's DELETE of the contact (decisions.md "Erasure").
func (s *Server) eraseContact(w http.ResponseWriter, r *http.Request) {
	res, err := s.deps.Commands.EraseContact.Handle(r.Context(), commands.EraseContact{
		Meta: operatorMeta(r), ContactID: mux.Vars(r)["contactId"],
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitWrite(w, r, s.deps.Runtime.ReadModels, res.Position, res.Types) {
		return
	}
	answer := admin.ErasureResponse{Success: true}
	answer.Erasure.ContactId, answer.Erasure.ErasedAt = res.ContactID, wire.At(res.ErasedAt)
	httpapi.Answer(w, http.StatusOK, answer)
}
