package integration

import (
	"net/http"

	"github.com/funnelhq/funnel/api/httpapi"
)

// owned checks the outcome of a read-model lookup of one resource for the requesting account
// (integration-api.md section 5, rule 5; httpapi.Owned).
func owned(w http.ResponseWriter, r *http.Request, what, ownerID string, err error) bool {
	return httpapi.Owned(w, r, what, ownerID, principalOf(r.Context()).accountID(), err)
}
