package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/projections/paging"
)

// A page written without a map reads, for encoding/json, as the map it replaces: success,
// the list under the resource's name, nextCursor only when there is a next page, and the final
// newline json.Encoder writes.
func TestWritePageAnswersAsAnObject(t *testing.T) {
	type row struct {
		ID   string            `json:"id"`
		Tags []string          `json:"tagIds"`
		More map[string]string `json:"customFields"`
		Note string            `json:"note"`
	}
	rows := []row{{ID: "ct_1", Tags: []string{"tg_a"}, More: map[string]string{"b": "2", "a": "<1>"}, Note: "a & b"}, {ID: "ct_2", Tags: []string{}, More: map[string]string{}}}
	for _, next := range []string{"", "eyJzIjo0Mn0"} {
		rec := httptest.NewRecorder()
		WritePage(rec, httptest.NewRequest("GET", "/api/v1/contacts?limit=2", nil), "contacts",
			func(paging.Page) ([]row, string, error) { return rows, next, nil }, func(r row) row { return r })
		if rec.Code != 200 || rec.Header().Get("Content-Type") != jsonContentType {
			t.Fatalf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
		want := map[string]any{"success": true, "contacts": rows}
		if next != "" {
			want["nextCursor"] = paging.NameCursor(listName(httptest.NewRequest("GET", "/api/v1/contacts", nil)), next) // the list's key, with its name
		}
		wantBody, _ := json.Marshal(want)
		var got, wantDecoded any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("not JSON: %v: %s", err, rec.Body)
		}
		_ = json.Unmarshal(wantBody, &wantDecoded)
		if !reflect.DeepEqual(got, wantDecoded) {
			t.Fatalf("page %s\nwant %s", rec.Body, wantBody)
		}
		if body := rec.Body.String(); body[len(body)-1] != '\n' || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("page %q: not one JSON value and a newline", body)
		}
		if got := rec.Body.String(); !strings.Contains(got, `\u003c1\u003e`) || !strings.Contains(got, `a \u0026 b`) {
			t.Fatalf("page %s: HTML characters not escaped as encoding/json escapes them", got)
		}
	}
}

// A page of documents (rows kept as the JSON the API shows) is byte for byte the page WritePage
// writes of the same rows: empty, one and several, with and without a next page.
func TestDocumentPageIsThePageOfItsRows(t *testing.T) {
	type row struct {
		ID   string `json:"id"`
		Note string `json:"note"`
	}
	all := []row{{ID: "ct_1", Note: "a & <b>"}, {ID: "ct_2", Note: `"quoted" é`}, {ID: "ct_3"}}
	for n := range len(all) + 1 {
		rows := all[:n]
		docs := make([]string, n)
		for i, r := range rows {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			docs[i] = string(b)
		}
		for _, next := range []string{"", "eyJzIjo0Mn0"} {
			want := httptest.NewRecorder()
			WritePage(want, httptest.NewRequest("GET", "/api/v1/contacts", nil), "contacts",
				func(paging.Page) ([]row, string, error) { return rows, next, nil }, func(r row) row { return r })
			got := httptest.NewRecorder()
			WriteDocumentPage(got, httptest.NewRequest("GET", "/api/v1/contacts", nil), "contacts",
				func(paging.Page) ([]string, string, error) { return docs, next, nil })
			if got.Code != 200 || got.Header().Get("Content-Type") != jsonContentType {
				t.Fatalf("status %d, Content-Type %q", got.Code, got.Header().Get("Content-Type"))
			}
			if got.Body.String() != want.Body.String() {
				t.Fatalf("%d rows, next %q:\n got %s\nwant %s", n, next, got.Body, want.Body)
			}
		}
	}
}
