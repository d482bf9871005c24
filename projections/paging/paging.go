// Package paging is the cursor paging every list of the service shares (decisions.md "Lists"):
// the page a request asks for, and the opaque cursors that carry a list's sort key from one page
// to the next. The read models of projections/ and the delivery log of webhooks/ both page with it.
package paging

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// List limits (decisions.md "Lists").
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Page asks for one page of a list.
type Page struct {
	Limit  int    // 1..MaxLimit
	Cursor string // opaque: the nextCursor of the previous page, or empty for the first
}

// ErrBadCursor is returned for a cursor this service did not hand out.
var ErrBadCursor = errors.New("paging: invalid cursor")

// ErrBadLimit is returned for a limit that is not a positive integer.
var ErrBadLimit = errors.New("limit must be a positive integer")

// Parse reads a page from a request's limit and cursor parameters (given tells whether limit
// was sent at all). A limit above MaxLimit is clamped, even one too large for an int; anything
// that is not a positive integer is ErrBadLimit.
func Parse(limit string, given bool, cursor string) (Page, error) {
	page := Page{Limit: DefaultLimit, Cursor: cursor}
	if !given {
		return page, nil
	}
	n, err := strconv.Atoi(limit)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(limit, "-") {
		n, err = MaxLimit, nil // a positive integer too large for an int is still above the maximum
	}
	if err != nil || n <= 0 {
		return page, ErrBadLimit
	}
	page.Limit = min(n, MaxLimit)
	return page, nil
}

// EncodeCursor turns a sort key into an opaque cursor. A cursor is the sort key of the last row
// of the previous page, so it stays valid while rows are added or changed: the next page starts
// strictly after it. Keys are plain values (numbers, strings, structs of them): one that cannot
// be encoded is a programming error, not a request's.
func EncodeCursor(key any) string {
	b, err := json.Marshal(key)
	if err != nil {
		panic(fmt.Sprintf("paging: cursor key %T cannot be encoded: %v", key, err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor back into its sort key (key points to it). A cursor is the client's
// input, and one this service did not hand out is refused (ErrBadCursor) rather than read as
// some page: not valid JSON of the key's shape, JSON null anywhere (json.Unmarshal would leave
// the zero key, the start of the list), an object with a member the key lacks or without one
// it has (another list's cursor, or a cursor cut short: json.Unmarshal would ignore or zero
// them), member names in another case, or a string PostgreSQL cannot compare (NUL, invalid
// UTF-8), which the database would otherwise refuse. A key is a plain value: a number, a string,
// or a struct of them whose members each cursor carries (EncodeCursor writes them all).
func DecodeCursor(cursor string, key any) error {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !utf8.Valid(b) {
		return ErrBadCursor
	}
	var values any
	if err := json.Unmarshal(b, &values); err != nil || hasNUL(values) || !shapedAs(values, reflect.TypeOf(key).Elem()) {
		return ErrBadCursor
	}
	if err := json.Unmarshal(b, key); err != nil {
		return ErrBadCursor
	}
	return nil
}

// NameCursor returns the cursor a list hands out for the key cursor of its next page (one of
// EncodeCursor's): that key with the name of the list, so that OpenCursor refuses it on any other
// list. Many lists page by a bare position of one shape (a number): without their names, each
// would read another's cursor as a page of its own and silently skip rows. "" (no next page)
// stays "".
func NameCursor(list, cursor string) string {
	if cursor == "" {
		return ""
	}
	key, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		panic(fmt.Sprintf("paging: %q is not a cursor of EncodeCursor's", cursor))
	}
	return EncodeCursor(namedCursor{List: list, Key: key})
}

// OpenCursor returns the key cursor (for DecodeCursor) of a cursor that NameCursor made for list,
// and ErrBadCursor for any other: one of another list, one without a name (every cursor handed
// out before cursors were named: its client starts the list again), or one not of that shape.
// The key itself is DecodeCursor's to check.
func OpenCursor(list, cursor string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !utf8.Valid(b) {
		return "", ErrBadCursor
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil || len(members) != 2 {
		return "", ErrBadCursor
	}
	var name string
	if err := json.Unmarshal(members["list"], &name); err != nil || name != list {
		return "", ErrBadCursor
	}
	key, ok := members["key"]
	if !ok || string(key) == "null" {
		return "", ErrBadCursor
	}
	return base64.RawURLEncoding.EncodeToString(key), nil
}

// namedCursor is a cursor as a list hands it out: the list's name and the sort key of its last
// row (EncodeCursor's JSON).
type namedCursor struct {
	List string          `json:"list"`
	Key  json.RawMessage `json:"key"`
}

// shapedAs tells whether a decoded JSON value has the shape of a key of type t: no null, and an
// object for a struct with exactly the struct's members, by their exact JSON names (those
// marked omitempty may be left out). What else the type demands (a number that fits, a string)
// json.Unmarshal checks.
func shapedAs(v any, t reflect.Type) bool {
	if v == nil {
		return false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		members := cursorMembers(t)
		for name := range obj {
			if _, known := members[name]; !known {
				return false
			}
		}
		for name, m := range members {
			switch item, present := obj[name]; {
			case !present && !m.optional:
				return false
			case present && !shapedAs(item, m.typ):
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		items, ok := v.([]any)
		if !ok {
			return false
		}
		for _, item := range items {
			if !shapedAs(item, t.Elem()) {
				return false
			}
		}
		return true
	}
	return true
}

// cursorMember is a member of a struct key: its type, and whether a cursor may leave it out.
type cursorMember struct {
	typ      reflect.Type
	optional bool
}

// cursorMembers are the JSON members of a struct key by name, as encoding/json names them
// (untagged embedded structs flattened).
func cursorMembers(t reflect.Type) map[string]cursorMember {
	out := map[string]cursorMember{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			maps.Copy(out, cursorMembers(f.Type))
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = cursorMember{typ: f.Type, optional: slices.Contains(strings.Split(opts, ","), "omitempty")}
	}
	return out
}

// Cut trims a list read with one row more than the page holds, and returns the cursor of the
// next page: the sort key of the page's last row, or "" when this is the last page.
func Cut[T any](rows []T, limit int, key func(T) any) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, EncodeCursor(key(rows[len(rows)-1]))
}

// hasNUL tells whether any string in a decoded JSON value holds a NUL character.
func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		return slices.ContainsFunc(v, hasNUL)
	case map[string]any:
		for k, item := range v {
			if strings.ContainsRune(k, 0) || hasNUL(item) {
				return true
			}
		}
	}
	return false
}
