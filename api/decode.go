package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MaxBodyBytes is the largest request body accepted (integration-api.md section 8).
const MaxBodyBytes = 256 << 10

// decodeBody reads a JSON object into dst. On bad input it answers (413 for a body over 256 KB,
// 400 naming the field at fault otherwise) and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) bool {
	if r.ContentLength > MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "request body must be at most 256 KB")
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "request body must be at most 256 KB")
		} else {
			writeError(w, http.StatusBadRequest, "could not read the request body")
		}
		return false
	}
	if msg := decodeJSON(body, dst); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return false
	}
	return true
}

// decodeJSON returns "" on success, else a message naming what is wrong.
func decodeJSON(body []byte, dst any) string {
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" {
		return "request body is required"
	}
	if !strings.HasPrefix(trimmed, "{") {
		return "request body must be a JSON object"
	}
	if hasNULEscape(trimmed) {
		return "strings must not contain NUL characters (\\u0000)"
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		var fieldErr *fieldError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return fmt.Sprintf("%s: expected %s, got %s", typeErr.Field, jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value)
		case errors.As(err, &fieldErr):
			return fieldErr.msg
		default:
			return "malformed JSON"
		}
	}
	if dec.More() {
		return "malformed JSON: unexpected data after the object"
	}
	return ""
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

// fieldError is a decoding error raised by a custom JSON type, with its own message.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

// scalar is a custom-field value: integrators send strings, and numbers and booleans are kept
// as their JSON text; null clears the field like an empty string.
type scalar string

func (s *scalar) UnmarshalJSON(b []byte) error {
	raw := strings.TrimSpace(string(b))
	switch {
	case raw == "null":
		*s = ""
	case strings.HasPrefix(raw, `"`):
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		*s = scalar(str)
	case strings.HasPrefix(raw, "{"), strings.HasPrefix(raw, "["):
		return &fieldError{msg: "customFields: values must be strings, numbers or booleans"}
	default:
		*s = scalar(raw)
	}
	return nil
}
