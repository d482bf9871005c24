package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/funnelhq/funnel/domain"
)

// MaxBodyBytes is the largest request body accepted (integration-api.md section 8).
const MaxBodyBytes = 256 << 10

// Decode reads the request's JSON object into dst. On bad input it answers (413 for a body over
// 256 KB, 400 naming the field at fault otherwise) and returns false.
func Decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	return DecodeChecked(w, r, dst, nil)
}

// DecodeChecked is Decode for a body whose generated type holds some values as the raw JSON
// of a union (a custom field's string, number or boolean) that the handler refuses in other
// shapes: check looks at them once dst is decoded. Its refusal is answered before a member of
// the wrong type, as a refusal of the decoder itself would be (encoding/json stops at a custom
// type's error, but reads on past a member of the wrong type and reports it at the end).
func DecodeChecked(w http.ResponseWriter, r *http.Request, dst any, check func() *FieldError) bool {
	body, ok := readBody(w, r)
	if !ok {
		return false
	}
	if bad := decodeJSON(body, dst, check); bad != nil {
		WriteCodedError(w, bad.code, bad.param, bad.message)
		return false
	}
	return true
}

// DecodeOptional is Decode for an endpoint whose body may be left out: an empty body (however it
// was sent, with a length of 0 or chunked) leaves dst as it is, as {} would.
func DecodeOptional(w http.ResponseWriter, r *http.Request, dst any) bool {
	body, ok := readBody(w, r)
	if !ok {
		return false
	}
	if strings.TrimSpace(string(body)) == "" {
		return true
	}
	if bad := decodeJSON(body, dst, nil); bad != nil {
		WriteCodedError(w, bad.code, bad.param, bad.message)
		return false
	}
	return true
}

// readBody reads the request body, at most 256 KB; on failure it answers (413 or 400).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > MaxBodyBytes {
		WriteError(w, http.StatusRequestEntityTooLarge, "request body must be at most 256 KB")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, "request body must be at most 256 KB")
		} else {
			WriteError(w, http.StatusBadRequest, "could not read the request body")
		}
		return nil, false
	}
	return body, true
}

// badBody is what is wrong with a request body: the code, the field at fault (or "") and the
// message of the answer.
type badBody struct {
	code           domain.ErrorCode
	param, message string
}

// decodeJSON returns nil on success, else what is wrong: invalid_json for a body that is not one
// JSON object, invalid_request for a value that the object holds. check, when not nil, is
// DecodeChecked's.
func decodeJSON(body []byte, dst any, check func() *FieldError) *badBody {
	notJSON := func(message string) *badBody { return &badBody{code: domain.CodeInvalidJSON, message: message} }
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" {
		return notJSON("request body is required")
	}
	if !strings.HasPrefix(trimmed, "{") {
		return notJSON("request body must be a JSON object")
	}
	if !utf8.ValidString(trimmed) || hasLoneSurrogateEscape(trimmed) {
		return notJSON("request body must be UTF-8 text: invalid UTF-8, or an unpaired surrogate escape (\\ud800)")
	}
	if hasNULEscape(trimmed) {
		return &badBody{code: domain.CodeInvalidRequest, message: "strings must not contain NUL characters (\\u0000)"}
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return notJSON("malformed JSON")
	}
	trailing := dec.More()
	// Member names are matched exactly: one in another case is an unknown member, ignored.
	exact := keepExactMembers(raw, reflect.TypeOf(dst))
	err := json.NewDecoder(bytes.NewReader(exact)).Decode(dst)
	var typeErr *json.UnmarshalTypeError
	if check != nil && (err == nil || errors.As(err, &typeErr)) {
		if fieldErr := check(); fieldErr != nil {
			return &badBody{code: domain.CodeInvalidRequest, param: fieldErr.Param, message: fieldErr.Message}
		}
	}
	if err != nil {
		var fieldErr *FieldError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			param := typeErrorPath(string(exact), typeErr)
			return &badBody{code: domain.CodeInvalidRequest, param: param,
				message: fmt.Sprintf("%s: expected %s, got %s", param, jsonTypeName(typeErr.Type.Kind().String()), jsonTypeName(typeErr.Value))}
		case errors.As(err, &fieldErr):
			return &badBody{code: domain.CodeInvalidRequest, param: fieldErr.Param, message: fieldErr.Message}
		default:
			return notJSON("malformed JSON")
		}
	}
	if trailing {
		return notJSON("malformed JSON: unexpected data after the object")
	}
	return nil
}

// typeErrorPath is the JSON path of the value a type error is about (stages[1].name, tagIds[3],
// values.fld_x), as decisions.md defines param. encoding/json names the Go fields it went
// through, without the index of an array element or the key of a map entry ("stages.name"), which
// is no path of the body: a client could not tell which element is at fault. The value is found
// again by where the error stopped the decoder (Offset); Field, the path without indexes, is the
// answer when that value cannot be found, or does not lie on that path.
func typeErrorPath(body string, typeErr *json.UnmarshalTypeError) string {
	path, ok := pathAt(body, typeErr.Offset)
	if !ok {
		return typeErr.Field
	}
	bare := arrayIndex.ReplaceAllString(path, "")
	if bare != typeErr.Field && !strings.HasPrefix(bare, typeErr.Field+".") {
		return typeErr.Field
	}
	return path
}

// arrayIndex is an array index in a JSON path.
var arrayIndex = regexp.MustCompile(`\[[0-9]+\]`)

// pathAt returns the JSON path of the innermost value of body (a JSON object) that holds the
// offset where encoding/json reported a type error: just after a scalar of the wrong type (or one
// byte further), or just after the opening bracket of an array or object of the wrong type. A
// value is taken to start where the token before it ended, which may include the separator
// before it but never the end of a sibling, so only the value itself and those around it hold the
// offset, and the first of them to end is the innermost. ok is false for a body it cannot walk,
// and for the root.
func pathAt(body string, offset int64) (path string, ok bool) {
	type level struct {
		path    string
		array   bool
		next    int    // the index of the array's next element
		key     string // the member of an object whose value comes next
		wantKey bool
		start   int64
	}
	var stack []*level
	holds := func(start, end int64) bool { return start < offset && offset <= end }
	// child is the path of the next value of the innermost array or object.
	child := func() string {
		parent := stack[len(stack)-1]
		if parent.array {
			parent.next++
			return fmt.Sprintf("%s[%d]", parent.path, parent.next-1)
		}
		if parent.path == "" {
			return parent.key
		}
		return parent.path + "." + parent.key
	}
	// ended marks the value of an object member as read: the next string is a key.
	ended := func() {
		if len(stack) > 0 && !stack[len(stack)-1].array {
			stack[len(stack)-1].wantKey = true
		}
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		delim, isDelim := tok.(json.Delim)
		switch {
		case isDelim && (delim == '{' || delim == '['):
			path := ""
			if len(stack) > 0 {
				path = child()
			}
			stack = append(stack, &level{path: path, array: delim == '[', wantKey: delim == '{', start: start})
		case isDelim: // '}' or ']'
			closed := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if holds(closed.start, dec.InputOffset()) {
				return closed.path, closed.path != ""
			}
			if len(stack) == 0 {
				return "", false
			}
			ended()
		case len(stack) == 0:
			return "", false
		case stack[len(stack)-1].wantKey:
			key, _ := tok.(string)
			stack[len(stack)-1].key, stack[len(stack)-1].wantKey = key, false
		default:
			path := child()
			// A number beyond its Go type is reported one byte past its end (encoding/json's
			// convertNumber), where the next value cannot have started: a comma comes first.
			if holds(start, dec.InputOffset()+1) {
				return path, true
			}
			ended()
		}
	}
}

// hasNULEscape tells whether a JSON text holds the escape \u0000 (a raw NUL byte is invalid JSON
// already). No field of this service has a use for NUL, and PostgreSQL cannot store it in text:
// an event holding one would stop the read models that must apply it.
func hasNULEscape(text string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], `u0000`)
		if j < 0 {
			return false
		}
		at := i + j
		backslashes := 0
		for k := at - 1; k >= 0 && text[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 1 { // an escaping backslash, not an escaped one
			return true
		}
		i = at + 1
	}
}

// hasLoneSurrogateEscape tells whether a JSON text holds a \uD800-\uDFFF escape that is not one
// half of a surrogate pair (a high one followed at once by an escaped low one). Such an escape
// names no character: encoding/json would put U+FFFD in its place, so two different values
// (u\ud800@example.com, u\udc00@example.com) would be read as the same one.
func hasLoneSurrogateEscape(text string) bool {
	surrogate := func(at int, lo, hi rune) bool {
		if at+6 > len(text) || text[at] != '\\' || text[at+1] != 'u' {
			return false
		}
		r, err := strconv.ParseUint(text[at+2:at+6], 16, 32)
		return err == nil && rune(r) >= lo && rune(r) <= hi
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' || i+1 >= len(text) {
			continue
		}
		switch {
		case surrogate(i, 0xD800, 0xDBFF) && surrogate(i+6, 0xDC00, 0xDFFF):
			i += 11 // the pair
		case surrogate(i, 0xD800, 0xDFFF):
			return true
		default:
			i++ // the escaped character, a backslash included
		}
	}
	return false
}

func jsonTypeName(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	case "bool":
		return "boolean"
	case "int", "int64", "int32":
		return "integer"
	case "float64", "float32":
		return "number"
	default:
		return goKind
	}
}

// FieldError is a refusal of a value of a request made while decoding it, by DecodeChecked's
// check or by a custom JSON type (UnmarshalJSON): Decode answers 400 invalid_request with its
// message and Param (the JSON path of the field at fault, when it knows it) instead of
// "malformed JSON".
type FieldError struct{ Message, Param string }

// Error returns the message.
func (e *FieldError) Error() string { return e.Message }
