package projections

import (
	"encoding/base64"
	"encoding/json"
	"errors"
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

// DecodeCursor reads a cursor back into its sort key.
func DecodeCursor(cursor string, key any) error {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return ErrBadCursor
	}
	if err := json.Unmarshal(b, key); err != nil {
		return ErrBadCursor
	}
	return nil
}
