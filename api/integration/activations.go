package integration

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
)

// validateActivation serves GET /api/v1/checkout/activations/{token}. It goes through the
// ValidateActivation command, since using a token past its expiry records that it expired; an
// expired activation is answered 200 with status expired.
func (s *Server) validateActivation(w http.ResponseWriter, r *http.Request) {
	token := mux.Vars(r)["token"]
	res, err := s.deps.Commands.ValidateActivation.Handle(r.Context(), commands.ValidateActivation{Meta: principalOf(r.Context()).meta(r), Token: token})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	s.answerActivation(w, r, res, token)
}

// completeActivation serves POST /api/v1/checkout/activations/{token}/complete: idempotent with
// the same externalUserId or none, 409 with another one, 400 once expired. The body is
// optional: none at all is the same as {}.
func (s *Server) completeActivation(w http.ResponseWriter, r *http.Request) {
	var req wire.CompleteActivationRequest
	if !httpapi.DecodeOptional(w, r, &req) {
		return
	}
	cmd := commands.CompleteActivation{Meta: principalOf(r.Context()).meta(r), Token: mux.Vars(r)["token"]}
	cmd.ExternalUserID = wire.Value(req.ExternalUserId)
	res, err := s.deps.Commands.CompleteActivation.Handle(r.Context(), cmd)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	s.answerActivation(w, r, res, cmd.Token)
}

// answerActivation waits for the read models to show what the command saw or recorded, and
// answers with the activation as the read model holds it, with the signup URL of the token the
// caller presented (the read model keeps no token).
func (s *Server) answerActivation(w http.ResponseWriter, r *http.Request, res commands.ActivationView, token string) {
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	a, err := s.deps.Read.Activations.Get(r.Context(), principalOf(r.Context()).accountID(), res.ActivationID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	link, err := domain.ActivationURL(a.ActivationBaseURL, token)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.ActivationResponse{Success: true, Activation: activationView(a, link)})
}

// activationRoutes registers the routes of SaaS signup activations (Router, server.go).
func (s *Server) activationRoutes(v1 routes) {
	v1.add(http.MethodGet, "/checkout/activations/{token}", domain.ScopeCheckoutRead, s.validateActivation)
	v1.add(http.MethodPost, "/checkout/activations/{token}/complete", domain.ScopeCheckoutWrite, s.completeActivation)
}
