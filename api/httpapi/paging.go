package httpapi

import (
	"net/http"

	"github.com/funnelhq/funnel/paging"
)

// WritePage answers one page of a list: it reads limit and cursor (400 when they are bad), asks
// list for the page, and answers {member: [view(row), ...], nextCursor} (nextCursor absent on the
// last page).
func WritePage[T any](w http.ResponseWriter, r *http.Request, member string,
	list func(paging.Page) ([]T, string, error), view func(T) Object) {
	page, ok := pageOf(w, r)
	if !ok {
		return
	}
	rows, next, err := list(page)
	if err != nil {
		Fail(w, r, err)
		return
	}
	views := make([]Object, len(rows))
	for i, row := range rows {
		views[i] = view(row)
	}
	body := Object{member: views}
	if next != "" {
		body["nextCursor"] = next
	}
	WriteJSON(w, http.StatusOK, body)
}

// pageOf reads limit and cursor from the query (paging.Parse). It answers 400 and returns false
// for a limit that is not a positive integer.
func pageOf(w http.ResponseWriter, r *http.Request) (paging.Page, bool) {
	q := r.URL.Query()
	limit, given := q["limit"]
	if !given {
		limit = []string{""}
	}
	page, err := paging.Parse(limit[0], given, q.Get("cursor"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return page, false
	}
	return page, true
}
