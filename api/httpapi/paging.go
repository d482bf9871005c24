package httpapi

import (
	"net/http"
	"strconv"

	"github.com/goccy/go-json"

	"github.com/funnelhq/funnel/paging"
)

// WritePage answers one page of a list: it reads limit and cursor (400 when they are bad), asks
// list for the page, and answers {"success": true, member: [view(row), ...], nextCursor}
// (nextCursor absent on the last page). A view is best a struct (its members in the order the
// spec gives them): it encodes without the map an Object costs.
func WritePage[T, V any](w http.ResponseWriter, r *http.Request, member string,
	list func(paging.Page) ([]T, string, error), view func(T) V) {
	page, ok := pageOf(w, r)
	if !ok {
		return
	}
	rows, next, err := list(page)
	if err != nil {
		Fail(w, r, err)
		return
	}
	views := make([]V, len(rows))
	for i, row := range rows {
		views[i] = view(row)
	}
	encoded, err := json.Marshal(views)
	if err != nil {
		Fail(w, r, err)
		return
	}
	writePage(w, member, encoded, next)
}

// WriteDocumentPage is WritePage for rows that a read model keeps as the JSON the API shows
// (documents): the page puts them side by side as they are.
func WriteDocumentPage(w http.ResponseWriter, r *http.Request, member string, list func(paging.Page) ([]json.RawMessage, string, error)) {
	page, ok := pageOf(w, r)
	if !ok {
		return
	}
	docs, next, err := list(page)
	if err != nil {
		Fail(w, r, err)
		return
	}
	size := 2
	for _, d := range docs {
		size += len(d) + 1
	}
	joined := make([]byte, 0, size)
	joined = append(joined, '[')
	for i, d := range docs {
		if i > 0 {
			joined = append(joined, ',')
		}
		joined = append(joined, d...)
	}
	writePage(w, member, append(joined, ']'), next)
}

// writePage answers a page whose list is encoded already.
func writePage(w http.ResponseWriter, member string, list []byte, next string) {
	w.Header().Set("Content-Type", jsonContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(pageJSON(member, list, next))
}

// pageJSON is the body of one page, {"success":true,"<member>":[...],"nextCursor":"..."} and a
// newline as json.Encoder ends every answer: its list's member is named after the resource.
func pageJSON(member string, list []byte, next string) []byte {
	out := make([]byte, 0, len(list)+len(member)+len(next)+48)
	out = append(out, `{"success":true,`...)
	out = strconv.AppendQuote(out, member)
	out = append(out, ':')
	out = append(out, list...)
	if next != "" {
		out = append(out, `,"nextCursor":`...)
		out = strconv.AppendQuote(out, next) // a cursor is URL-safe base64: nothing to escape
	}
	return append(out, "}\n"...)
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
