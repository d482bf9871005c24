package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"

	"github.com/goccy/go-json"

	"github.com/funnelhq/funnel/projections/paging"
)

// WritePage answers one page of a list: it reads limit and cursor (400 when they are bad), asks
// list for the page, and answers {"success": true, member: [view(row), ...], nextCursor}
// (nextCursor absent on the last page). A view is best a struct (its members in the order the
// spec gives them): it encodes without the map a map[string]any costs.
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
	next = paging.NameCursor(listName(r), next)
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
// (documents, as JSON text): the page puts them side by side as they are, in one buffer.
func WriteDocumentPage(w http.ResponseWriter, r *http.Request, member string, list func(paging.Page) ([]string, string, error)) {
	page, ok := pageOf(w, r)
	if !ok {
		return
	}
	docs, next, err := list(page)
	if err != nil {
		Fail(w, r, err)
		return
	}
	next = paging.NameCursor(listName(r), next)
	size := pageSize(member, 2, next)
	for _, d := range docs {
		size += len(d) + 1
	}
	body := appendPageStart(make([]byte, 0, size), member)
	body = append(body, '[')
	for i, d := range docs {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, d...)
	}
	body = append(body, ']')
	writeJSONBody(w, appendPageEnd(body, next))
}

// writePage answers a page whose list is encoded already.
func writePage(w http.ResponseWriter, member string, list []byte, next string) {
	writeJSONBody(w, pageJSON(member, list, next))
}

func writeJSONBody(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", jsonContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// pageJSON is the body of one page, {"success":true,"<member>":[...],"nextCursor":"..."} and a
// newline as json.Encoder ends every answer: its list's member is named after the resource.
func pageJSON(member string, list []byte, next string) []byte {
	out := appendPageStart(make([]byte, 0, pageSize(member, len(list), next)), member)
	return appendPageEnd(append(out, list...), next)
}

// pageSize is the length of a page whose list is listLen bytes long, give or take the quotes'
// escapes.
func pageSize(member string, listLen int, next string) int {
	return len(member) + listLen + len(next) + 48
}

func appendPageStart(out []byte, member string) []byte {
	out = append(out, `{"success":true,`...)
	out = strconv.AppendQuote(out, member)
	return append(out, ':')
}

func appendPageEnd(out []byte, next string) []byte {
	if next != "" {
		out = append(out, `,"nextCursor":`...)
		out = strconv.AppendQuote(out, next) // a cursor is URL-safe base64: nothing to escape
	}
	return append(out, "}\n"...)
}

// pageOf reads limit and cursor from the query (paging.Parse). It answers 400 and returns false
// for a limit that is not a positive integer, and for a cursor that no page of this list handed
// out (paging.OpenCursor): the list gets the key cursor inside it.
func pageOf(w http.ResponseWriter, r *http.Request) (paging.Page, bool) {
	q := r.URL.Query()
	limit, given := q["limit"]
	if !given {
		limit = []string{""}
	}
	page, err := paging.Parse(limit[0], given, q.Get("cursor"))
	if err != nil {
		WriteFieldError(w, "limit", err.Error())
		return page, false
	}
	if page.Cursor != "" {
		if page.Cursor, err = paging.OpenCursor(listName(r), page.Cursor); err != nil {
			writeBadCursor(w, "cursor")
			return page, false
		}
	}
	return page, true
}

// listName is the name a list's cursors carry (ListName) for the list r asks for.
func listName(r *http.Request) string {
	accountID := ""
	if ex := exchangeOf(r); ex != nil {
		accountID = ex.accountID
	}
	return ListName(r.URL.Path, accountID, r.URL.Query())
}

// ListName is the name the cursors of a list carry, so that no other list takes them: its path
// as requested (the leads of another CRM, the contacts of another account on the operator API
// are other lists), the account the request acts for ("" for none; the integration API's paths
// do not name it), and the query that chose the list (a history's contactId and order, a
// filter), its limit and cursor aside. A client pages with the query of its first page. The
// cursor carries a digest of it: short, and without the query's values (an email searched for).
func ListName(path, accountID string, query url.Values) string {
	name := path
	if accountID != "" {
		name += " " + accountID
	}
	q := url.Values{}
	for k, v := range query {
		if k != "cursor" && k != "limit" {
			q[k] = v
		}
	}
	if len(q) > 0 {
		name += "?" + q.Encode()
	}
	sum := sha256.Sum256([]byte(name))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}
