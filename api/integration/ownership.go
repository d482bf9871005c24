package integration

import (
	"net/http"

	"github.com/funnelhq/funnel/api/httpapi"
)

// owned checks the outcome of a read-model lookup of one resource for the requesting account
// (integration-api.md section 5, rule 5): 404 when it exists nowhere, 403 when it belongs to
// another account. It answers and returns false unless the request may go on.
func owned(w http.ResponseWriter, r *http.Request, what, ownerID string, err error) bool {
	switch {
	case httpapi.IsNotFound(err):
		httpapi.WriteError(w, http.StatusNotFound, what+" not found")
		return false
	case err != nil:
		httpapi.Fail(w, r, err)
		return false
	case ownerID != principalOf(r.Context()).accountID():
		httpapi.WriteError(w, http.StatusForbidden, what+" belongs to another account")
		return false
	}
	return true
}
