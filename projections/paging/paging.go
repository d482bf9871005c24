// Package paging is the cursor paging every list of the service shares (decisions.md "Lists"):
// the page a request asks for, and the opaque cursors that carry a list's sort key from one page
// to the next. The read models of projections/ and the delivery log of webhooks/ both page with it.
package paging

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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

// DecodeCursor reads a cursor back into its sort key. A cursor is the client's input: one that
// is not valid JSON of the key's shape, or that holds a string PostgreSQL cannot compare (NUL,
// invalid UTF-8), is refused here rather than by the database.
func DecodeCursor(cursor string, key any) error {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !utf8.Valid(b) {
		return ErrBadCursor
	}
	var values any
	if err := json.Unmarshal(b, &values); err != nil || hasNUL(values) {
		return ErrBadCursor
	}
	if err := json.Unmarshal(b, key); err != nil {
		return ErrBadCursor
	}
	return nil
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
