package projections

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The fast paths of decodeStrings and decodeStringMap decode what encoding/json decodes, and
// refuse what it refuses.
func TestJSONColumnsDecodeAsEncodingJSON(t *testing.T) {
	arrays := []string{`[]`, `["tg_a"]`, `["tg_a","tg_b","tg_c"]`, `null`, `["a\"b"]`, `["é","\u00e9"]`, `[ "a" ]`,
		`["a",]`, `["a"`, `["a""b"]`, `[1]`, `["a",null]`, `"a"`, ``, `[`, `["a\tb"]`, "[\"a\tb\"]", "[\"\xff\"]", "[\"é\"]"}
	for _, in := range arrays {
		var want []string
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := decodeStrings([]byte(in))
		if (err != nil) != (wantErr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("decodeStrings(%q) = %q, %v; encoding/json: %q, %v", in, got, err, want, wantErr)
		}
	}
	objects := []string{`{}`, `{"cf_a":"gold"}`, `{"cf_a":"gold","cf_b":""}`, `null`, `{"a":"x\"y"}`, `{ "a":"b"}`,
		`{"a":"b",}`, `{"a":1}`, `{"a"}`, `{"a":"b"`, `{"a":"b""c":"d"}`, `{"a":"b","a":"c"}`, "{\"a\":\"x\ny\"}", `[]`, "{\"a\":\"\xffé\"}"}
	for _, in := range objects {
		var want map[string]string
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := decodeStringMap([]byte(in))
		if (err != nil) != (wantErr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("decodeStringMap(%q) = %q, %v; encoding/json: %q, %v", in, got, err, want, wantErr)
		}
	}
}

// FuzzJSONColumns checks the fast paths against encoding/json on any input.
func FuzzJSONColumns(f *testing.F) {
	for _, seed := range []string{`["tg_a","tg_b"]`, `{"cf_a":"gold"}`, `[]`, `{}`, `null`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var wantList []string
		if err := json.Unmarshal([]byte(in), &wantList); err == nil {
			if got, err := decodeStrings([]byte(in)); err != nil || !reflect.DeepEqual(got, wantList) {
				t.Errorf("decodeStrings(%q) = %q, %v; want %q", in, got, err, wantList)
			}
		} else if got, ok := plainStrings([]byte(in)); ok {
			t.Errorf("plainStrings(%q) = %q, which encoding/json refuses: %v", in, got, err)
		}
		var wantMap map[string]string
		if err := json.Unmarshal([]byte(in), &wantMap); err == nil {
			if got, err := decodeStringMap([]byte(in)); err != nil || !reflect.DeepEqual(got, wantMap) {
				t.Errorf("decodeStringMap(%q) = %q, %v; want %q", in, got, err, wantMap)
			}
		} else if got, ok := plainStringMap([]byte(in)); ok {
			t.Errorf("plainStringMap(%q) = %q, which encoding/json refuses: %v", in, got, err)
		}
	})
}
