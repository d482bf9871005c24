package httpapi

import "net/http"

// Owned checks the outcome of a lookup of one resource, by id, for the account a request acts in
// (decisions.md "General", both APIs): 404 when it exists nowhere, 403 when it belongs to another
// account (ids are unique across accounts, so it is that one and no other). It answers and
// returns false unless the request may go on.
func Owned(w http.ResponseWriter, r *http.Request, what, ownerID, accountID string, err error) bool {
	switch {
	case IsNotFound(err):
		WriteError(w, http.StatusNotFound, what+" not found")
		return false
	case err != nil:
		Fail(w, r, err)
		return false
	case ownerID != accountID:
		WriteError(w, http.StatusForbidden, what+" belongs to another account")
		return false
	}
	return true
}
