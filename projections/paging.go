package projections

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// Page asks for one page of a list (decisions.md "Lists").
type Page struct {
	Limit  int    // 1..200, already validated by the caller
	Cursor string // opaque: the nextCursor of the previous page, or empty for the first
}

// ErrBadCursor is returned for a cursor this service did not hand out.
var ErrBadCursor = errors.New("projections: invalid cursor")

// EncodeCursor turns a sort key into an opaque cursor. A cursor is the sort key of the last row
// of the previous page, so it stays valid while rows are added or changed: the next page starts
// strictly after it.
func EncodeCursor(key any) string {
	b, _ := json.Marshal(key)
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

// seqAfter reads a creation-order cursor: the seq of the last row of the previous page, or 0.
func seqAfter(page Page) (int64, error) {
	if page.Cursor == "" {
		return 0, nil
	}
	var after int64
	if err := DecodeCursor(page.Cursor, &after); err != nil {
		return 0, err
	}
	return after, nil
}

// cut trims a list read with one row more than the page holds, and returns the cursor of the
// next page: the sort key of the page's last row, or "" when this is the last page.
func cut[T any](rows []T, limit int, key func(T) any) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, EncodeCursor(key(rows[len(rows)-1]))
}
