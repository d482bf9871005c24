package httpapi

import (
	"encoding/json"
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

// Member names are matched exactly (integration-api.md "Everywhere": unknown members are
// ignored). encoding/json alone matches them whatever their case, so an extra "FIRSTNAME": ""
// forwarded from another system would clear firstName, and "EMAIL" would stand in for a missing
// email. A member in another case is unknown at every depth (in an array's objects, a map's
// values, an embedded struct), while a type that decodes itself, a map's keys and the order and
// text of the values are left as sent.
func TestMemberNamesAreMatchedExactly(t *testing.T) {
	type stage struct {
		Name string `json:"name"`
	}
	type Common struct {
		Source string `json:"source"`
	}
	type body struct {
		Common
		Email     string           `json:"email"`
		FirstName *string          `json:"firstName"`
		Stages    []stage          `json:"stages"`
		Values    map[string]stage `json:"values"`
		Raw       json.RawMessage  `json:"raw"`
		Any       any              `json:"any"`
		Untagged  int
		Extra     map[string]string `json:"-"`
	}
	var dst body
	in := `{"email": "a@example.com", "EMAIL": "b@example.com", "firstName": "Ann", "FIRSTNAME": "",
		"stages": [{"name": "New", "NAME": "x"}, {"Name": "y"}], "values": {"Fld_A": {"name": "v", "nAme": "w"}},
		"raw": {"KEEP": 1}, "any": {"Kept": true}, "Source": "x", "source": "api", "untagged": 5, "Untagged": 7, "Extra": {"a": "b"}}`
	if bad := decodeJSON([]byte(in), &dst, nil); bad != nil {
		t.Fatalf("%+v", bad)
	}
	if dst.Email != "a@example.com" || dst.FirstName == nil || *dst.FirstName != "Ann" || dst.Source != "api" || dst.Untagged != 7 || dst.Extra != nil {
		t.Errorf("decoded %+v", dst)
	}
	if len(dst.Stages) != 2 || dst.Stages[0].Name != "New" || dst.Stages[1].Name != "" {
		t.Errorf("stages %+v", dst.Stages)
	}
	if v, ok := dst.Values["Fld_A"]; !ok || v.Name != "v" || len(dst.Values) != 1 {
		t.Errorf("values %+v: a map's keys are data, kept as sent", dst.Values)
	}
	if string(dst.Raw) != `{"KEEP": 1}` {
		t.Errorf("raw = %s, want the value as sent", dst.Raw)
	}
	if dst.Any.(map[string]any)["Kept"] != true {
		t.Errorf("any = %v", dst.Any)
	}

	// Only the name in another case: the member is missing.
	dst = body{}
	if bad := decodeJSON([]byte(`{"EMAIL": "b@example.com", "Stages": [{"name": "x"}]}`), &dst, nil); bad != nil || dst.Email != "" || dst.Stages != nil {
		t.Errorf("%+v %+v", bad, dst)
	}
	// The path of a type error is still the path as sent, after members that were dropped.
	bad := decodeJSON([]byte(`{"STAGES": 5, "stages": [{"NAME": 1, "name": "a"}, {"name": 7}]}`), &dst, nil)
	if bad == nil || bad.param != "stages[1].name" {
		t.Errorf("%+v, want param stages[1].name", bad)
	}
	// A value of the wrong shape is left for the decoder to refuse.
	if bad := decodeJSON([]byte(`{"stages": {"name": "x"}}`), &dst, nil); bad == nil || bad.param != "stages" {
		t.Errorf("%+v, want param stages", bad)
	}
	// Malformed JSON and data after the object are refused as they were.
	for _, in := range []string{`{"email": "a"`, `{"email": "a"} {}`, `{"email": "a",}`} {
		if bad := decodeJSON([]byte(in), &dst, nil); bad == nil || bad.code != domain.CodeInvalidJSON {
			t.Errorf("%s: %+v, want invalid_json", in, bad)
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
