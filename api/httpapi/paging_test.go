package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/paging"
)

// A page written without a map reads, for encoding/json, as the Object it replaces: success,
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
		want := Object{"success": true, "contacts": rows}
		if next != "" {
			want["nextCursor"] = next
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
