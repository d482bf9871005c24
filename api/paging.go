package api

import (
	"net/http"
	"strconv"

	"funnel/projections"
)

// List limits (decisions.md "Lists").
const (
	defaultLimit = 50
	maxLimit     = 200
)

// pageOf reads limit and cursor from the query. It answers 400 and returns false for a limit
// that is not a positive integer; a limit above the maximum is clamped.
func pageOf(w http.ResponseWriter, r *http.Request) (projections.Page, bool) {
	page := projections.Page{Limit: defaultLimit, Cursor: r.URL.Query().Get("cursor")}
	if raw, given := r.URL.Query()["limit"]; given {
		n, err := strconv.Atoi(raw[0])
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer")
			return page, false
		}
		page.Limit = min(n, maxLimit)
	}
	return page, true
}

// withCursor adds nextCursor to a list body when there is a next page.
func withCursor(body object, next string) object {
	if next != "" {
		body["nextCursor"] = next
	}
	return body
}
