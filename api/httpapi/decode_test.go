package httpapi

import (
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
)

// A value of the wrong type is named by its JSON path (decisions.md "Error codes": param is
// "its JSON path, e.g. email, tagIds[3], values.fld_x"), with the index of the array element and
// the key of the map entry it is in: encoding/json's own name for it drops both ("tagIds",
// "stages.name"), which names no value of the body, so a client could not tell which is at fault.
func TestAWrongTypeIsNamedByItsJSONPath(t *testing.T) {
	type stage struct {
		Name string `json:"name"`
	}
	type body struct {
		Email  string             `json:"email"`
		TagIDs []string           `json:"tagIds"`
		Stages []stage            `json:"stages"`
		Values map[string]float64 `json:"values"`
		Grid   [][]int            `json:"grid"`
		Nested struct {
			Stages []stage `json:"stages"`
		} `json:"nested"`
	}
	for _, c := range []struct{ body, param, message string }{
		{`{"email": 5}`, "email", "email: expected string, got number"},
		{`{"tagIds": ["a", "b", "c", 4]}`, "tagIds[3]", "tagIds[3]: expected string, got number"},
		{`{"tagIds": ["a", ["b"]]}`, "tagIds[1]", "tagIds[1]: expected string, got array"},
		{`{"tagIds": ["a", {"b": 1}]}`, "tagIds[1]", "tagIds[1]: expected string, got object"},
		{`{"stages": [{"name": "New"}, {"name": 7}]}`, "stages[1].name", "stages[1].name: expected string, got number"},
		{`{"stages": [{"name": "New"}, {"name": [7, 8]}]}`, "stages[1].name", "stages[1].name: expected string, got array"},
		{`{"stages": [{"name": "a"}, 5]}`, "stages[1]", "stages[1]: expected object, got number"},
		{` {"email": "a@example.com", "values": {"fld_a": 1, "fld_b": "x"}}`, "values.fld_b", "values.fld_b: expected number, got string"},
		{`{"grid": [[1, 2], [3, "4"]]}`, "grid[1][1]", "grid[1][1]: expected integer, got string"},
		{`{"nested": {"stages": [{"name": "x"}, {"name": "y"}, {"name": false}]}}`, "nested.stages[2].name", "nested.stages[2].name: expected string, got boolean"},
		{`{"stages": [{"name": "x"}], "tagIds": [1]}`, "tagIds[0]", "tagIds[0]: expected string, got number"},
		{`{"values": {"fld_a": 1e400, "fld_b": 2}}`, "values.fld_a", "values.fld_a: expected number, got number 1e400"},
		{`{"values": {"fld_a": 1, "fld_b": 1e400}}`, "values.fld_b", "values.fld_b: expected number, got number 1e400"},
		{`{"grid": [[1, 1e400], [2]]}`, "grid[0][1]", "grid[0][1]: expected integer, got number 1e400"},
		{`{"grid": [[1.5]]}`, "grid[0][0]", "grid[0][0]: expected integer, got number 1.5"},
		{`{"values": {"fld_a": 1}, "email": ["x"]}`, "email", "email: expected string, got array"},
	} {
		var dst body
		bad := decodeJSON([]byte(c.body), &dst, nil)
		if bad == nil || bad.code != domain.CodeInvalidRequest || bad.param != c.param || bad.message != c.message {
			t.Errorf("%s: %+v, want param %q, message %q", c.body, bad, c.param, c.message)
		}
	}
}

// A body is UTF-8 text (integration-api.md "Everywhere"). encoding/json puts U+FFFD in place of a
// byte that is not UTF-8 and of an escape that names half a surrogate pair, and reads on, so
// "u\xff@example.com" and "u\xfe@example.com" would be the same email: such a body is refused.
// A surrogate pair written as two escapes is a character, and accepted.
func TestABodyThatIsNotUTF8IsRefused(t *testing.T) {
	type body struct {
		Name string `json:"name"`
	}
	for _, in := range []string{
		"{\"name\": \"u\xff\"}",
		"{\"name\": \"a\xed\xa0\x80b\"}", // a surrogate encoded in UTF-8
		"{\"n\xffame\": \"a\"}",
		`{"name": "a\ud800b"}`,
		`{"name": "a\udc00"}`,
		`{"name": "\ud800\ud800"}`,
		`{"name": "\udbff"}`,
		`{"name": "\\\ud800"}`,
	} {
		var dst body
		if bad := decodeJSON([]byte(in), &dst, nil); bad == nil || bad.code != domain.CodeInvalidJSON || !strings.Contains(bad.message, "UTF-8") {
			t.Errorf("%q: %+v, want invalid_json", in, bad)
		}
	}
	for in, want := range map[string]string{
		`{"name": "\ud83d\ude00"}`: "😀",
		`{"name": "\\ud800"}`:      `\ud800`, // an escaped backslash: plain text
		`{"name": "é\u00e9"}`:      "éé",
	} {
		var dst body
		if bad := decodeJSON([]byte(in), &dst, nil); bad != nil || dst.Name != want {
			t.Errorf("%s: %+v, name %q, want %q", in, bad, dst.Name, want)
		}
	}
}
