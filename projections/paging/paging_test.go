package paging

import (
	"encoding/base64"
	"errors"
	"reflect"
	"testing"
)

// The sort keys the lists of the service page with (projections, webhooks, api/operator): each
// accepts every cursor EncodeCursor made of it.
type (
	feedKey struct {
		P int64 `json:"p"`
	}
	deliveryKey struct {
		Position int64  `json:"p"`
		ID       string `json:"i"`
	}
	newestKey struct {
		CreatedAt int64  `json:"c"`
		ID        string `json:"i"`
	}
	tagKey struct {
		Order   int64  `json:"o"`
		NameKey string `json:"n"`
		ID      string `json:"i"`
	}
)

func decodeAs[K any](cursor string) (K, error) {
	var key K
	err := DecodeCursor(cursor, &key)
	return key, err
}

func roundTrip[K any](t *testing.T, key K) {
	t.Helper()
	got, err := decodeAs[K](EncodeCursor(key))
	if err != nil || !reflect.DeepEqual(got, key) {
		t.Errorf("the cursor of %#v decodes as %#v, %v", key, got, err)
	}
}

func TestDecodeCursorAcceptsTheCursorsItsListsHandOut(t *testing.T) {
	roundTrip(t, int64(0))
	roundTrip(t, int64(1<<62))
	roundTrip(t, int32(-7))
	roundTrip(t, "contacts")
	roundTrip(t, feedKey{P: 42})
	roundTrip(t, feedKey{}) // an empty feed's cursor: position 0
	roundTrip(t, deliveryKey{Position: 9, ID: "dlv_x"})
	roundTrip(t, newestKey{CreatedAt: 1700000000000, ID: ""})
	roundTrip(t, tagKey{Order: -3, NameKey: "vip <&> é", ID: "tag_1"})
}

// A cursor no page of the list handed out is refused, not read as the start of the list or as
// some other page: JSON null, another list's cursor, a cursor with a member missing or added,
// a member of another case, a null member.
func TestDecodeCursorRefusesCursorsItsListDidNotHandOut(t *testing.T) {
	enc := func(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
	cases := []struct {
		name   string
		cursor string
		decode func(string) error
	}{
		{"null as a position", enc(`null`), func(c string) error { _, err := decodeAs[int64](c); return err }},
		{"null as a name", enc(`null`), func(c string) error { _, err := decodeAs[string](c); return err }},
		{"null as a feed cursor", enc(`null`), func(c string) error { _, err := decodeAs[feedKey](c); return err }},
		{"null as a delivery cursor", "bnVsbA", func(c string) error { _, err := decodeAs[newestKey](c); return err }},
		{"a delivery-log cursor in the feed", enc(`{"c":1,"i":"x"}`), func(c string) error { _, err := decodeAs[feedKey](c); return err }},
		{"a feed cursor in the delivery log", enc(`{"p":5}`), func(c string) error { _, err := decodeAs[newestKey](c); return err }},
		{"a feed cursor in the operator's delivery list", enc(`{"p":5}`), func(c string) error { _, err := decodeAs[deliveryKey](c); return err }},
		{"a feed cursor in a creation-order list", enc(`{"p":5}`), func(c string) error { _, err := decodeAs[int64](c); return err }},
		{"a position in the feed", enc(`5`), func(c string) error { _, err := decodeAs[feedKey](c); return err }},
		{"an empty object", enc(`{}`), func(c string) error { _, err := decodeAs[feedKey](c); return err }},
		{"a member missing", enc(`{"o":1,"n":"a"}`), func(c string) error { _, err := decodeAs[tagKey](c); return err }},
		{"a member added", enc(`{"p":5,"i":"x"}`), func(c string) error { _, err := decodeAs[feedKey](c); return err }},
		{"a member of another case", enc(`{"P":5}`), func(c string) error { _, err := decodeAs[feedKey](c); return err }},
		{"a null member", enc(`{"c":null,"i":"x"}`), func(c string) error { _, err := decodeAs[newestKey](c); return err }},
		{"a member of another type", enc(`{"p":"5"}`), func(c string) error { _, err := decodeAs[feedKey](c); return err }},
		{"an array", enc(`[5]`), func(c string) error { _, err := decodeAs[int64](c); return err }},
		{"a fraction", enc(`1.5`), func(c string) error { _, err := decodeAs[int64](c); return err }},
		{"a NUL", enc(`"a\u0000b"`), func(c string) error { _, err := decodeAs[string](c); return err }},
		{"not base64", "!!", func(c string) error { _, err := decodeAs[int64](c); return err }},
	}
	for _, c := range cases {
		if err := c.decode(c.cursor); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%s (%s): %v, want ErrBadCursor", c.name, c.cursor, err)
		}
	}
}

// A member marked omitempty may be left out (EncodeCursor leaves it out when empty); members
// of an embedded struct are the struct's own, as encoding/json flattens them.
func TestDecodeCursorReadsMembersAsEncodingJSONNamesThem(t *testing.T) {
	type optional struct {
		P    int64  `json:"p"`
		Note string `json:"note,omitempty"`
	}
	roundTrip(t, optional{P: 3})
	roundTrip(t, optional{P: 3, Note: "x"})
	type embedded struct {
		feedKey
		ID string `json:"i"`
	}
	roundTrip(t, embedded{feedKey{P: 1}, "x"})
	if _, err := decodeAs[embedded](EncodeCursor(feedKey{P: 1})); !errors.Is(err, ErrBadCursor) {
		t.Errorf("a cursor without the embedding struct's own member: %v", err)
	}
}

// A list hands out its cursors with its name (NameCursor), and takes back only those
// (OpenCursor): another list's cursor of the same shape (a bare position), a cursor without a
// name (every one handed out before cursors were named) or with a member more or less is refused,
// where it would have been read as a page of this list.
func TestOpenCursorTakesOnlyTheCursorsOfItsList(t *testing.T) {
	key := EncodeCursor(int64(417))
	named := NameCursor("/api/v1/contacts", key)
	if got, err := OpenCursor("/api/v1/contacts", named); err != nil || got != key {
		t.Fatalf("OpenCursor(its own) = %q, %v, want %q", got, err, key)
	}
	if NameCursor("/api/v1/contacts", "") != "" {
		t.Error("the last page's empty cursor got a name")
	}
	enc := func(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
	for _, c := range []string{
		NameCursor("/api/v1/customers", key),
		NameCursor("/api/v1/crms/crm_b/leads", key),
		key, // a bare position, as cursors were before they were named
		enc(`null`),
		enc(`{"list":"/api/v1/contacts"}`),
		enc(`{"list":"/api/v1/contacts","key":null}`),
		enc(`{"list":"/api/v1/contacts","key":417,"x":1}`),
		enc(`{"LIST":"/api/v1/contacts","key":417}`),
		enc(`{"list":null,"key":417}`),
		enc(`{"list":["/api/v1/contacts"],"key":417}`),
		"%%%",
	} {
		if got, err := OpenCursor("/api/v1/contacts", c); !errors.Is(err, ErrBadCursor) {
			t.Errorf("OpenCursor(%q) = %q, %v, want ErrBadCursor", c, got, err)
		}
	}
}
