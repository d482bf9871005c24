package api

import (
	"net/http"
)

// owned checks the outcome of a read-model lookup of one resource for the requesting account
// (integration-api.md section 5, rule 5): 404 when it exists nowhere, 403 when it belongs to
// another account. It answers and returns false unless the request may go on.
func (s *Server) owned(w http.ResponseWriter, r *http.Request, what, ownerID string, err error) bool {
	switch {
	case isNotFound(err):
		writeError(w, http.StatusNotFound, what+" not found")
		return false
	case err != nil:
		s.fail(w, r, err)
		return false
	case ownerID != principalOf(r.Context()).key.AccountID:
		writeError(w, http.StatusForbidden, what+" belongs to another account")
		return false
	}
	return true
}

// failOperatorLookup answers a failed lookup of a resource under an account of the operator
// API. The operator names the account in the path, so a resource of another account is simply
// not one of this account's: 404.
func (s *Server) failOperatorLookup(w http.ResponseWriter, r *http.Request, what string, err error) {
	if err == nil || isNotFound(err) {
		writeError(w, http.StatusNotFound, what+" not found in this account")
		return
	}
	s.fail(w, r, err)
}
