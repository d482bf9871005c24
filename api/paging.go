package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

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
		if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(raw[0], "-") {
			n, err = maxLimit, nil // a positive integer too large for an int is still above the maximum
		}
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer")
			return page, false
		}
		page.Limit = min(n, maxLimit)
	}
	return page, true
}

// writePage answers one page of a list: it reads limit and cursor (400 when they are bad), asks
// list for the page, and answers {member: [view(row), ...], nextCursor} (nextCursor absent on the
// last page).
func writePage[T any](s *Server, w http.ResponseWriter, r *http.Request, member string,
	list func(projections.Page) ([]T, string, error), view func(T) object) {
	page, ok := pageOf(w, r)
	if !ok {
		return
	}
	rows, next, err := list(page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]object, len(rows))
	for i, row := range rows {
		views[i] = view(row)
	}
	body := object{member: views}
	if next != "" {
		body["nextCursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
}
