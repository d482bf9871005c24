package projections

import (
	"bytes"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// A contact row keeps its tag ids as a JSON array of strings and its custom fields as a JSON
// object of strings, both written by encoding/json; a list decodes the two for every row of its
// page. decodeStrings and decodeStringMap read the plain form they are written in (no spaces, no
// escapes: ids and most values) directly, and hand anything else to goccy/go-json.

// decodeStrings decodes a JSON array of strings; null is nil.
func decodeStrings(b []byte) ([]string, error) {
	if out, ok := plainStrings(b); ok {
		return out, nil
	}
	var out []string
	err := gojson.Unmarshal(b, &out)
	return out, err
}

// decodeStringMap decodes a JSON object of strings; null is nil.
func decodeStringMap(b []byte) (map[string]string, error) {
	if out, ok := plainStringMap(b); ok {
		return out, nil
	}
	var out map[string]string
	err := gojson.Unmarshal(b, &out)
	return out, err
}

// plainStrings reads ["a","b"] with no space and no escape in it; ok is false for anything else.
func plainStrings(b []byte) ([]string, bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' || bytes.IndexByte(b, '\\') >= 0 {
		return nil, false
	}
	body := b[1 : len(b)-1]
	out := make([]string, 0, bytes.Count(body, []byte{','})+1)
	for len(body) > 0 {
		s, rest, ok := plainString(body)
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if len(rest) == 0 {
			break
		}
		if rest[0] != ',' || len(rest) == 1 {
			return nil, false
		}
		body = rest[1:]
	}
	return out, true
}

// plainStringMap reads {"k":"v",…} with no space and no escape in it; ok is false for anything
// else.
func plainStringMap(b []byte) (map[string]string, bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || bytes.IndexByte(b, '\\') >= 0 {
		return nil, false
	}
	body := b[1 : len(b)-1]
	out := make(map[string]string, bytes.Count(body, []byte{','})+1)
	for len(body) > 0 {
		k, rest, ok := plainString(body)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return nil, false
		}
		v, rest, ok := plainString(rest[1:])
		if !ok {
			return nil, false
		}
		out[k] = v
		if len(rest) == 0 {
			break
		}
		if rest[0] != ',' || len(rest) == 1 {
			return nil, false
		}
		body = rest[1:]
	}
	return out, true
}

// plainString reads a string without escapes at the start of b and returns what follows it.
func plainString(b []byte) (string, []byte, bool) {
	if len(b) < 2 || b[0] != '"' {
		return "", nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return "", nil, false
	}
	s := b[1 : 1+end]
	ascii := true
	for _, c := range s {
		if c < 0x20 { // a control character is not valid JSON text
			return "", nil, false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(s) { // encoding/json would replace the invalid bytes
		return "", nil, false
	}
	return string(s), b[2+end:], true
}
