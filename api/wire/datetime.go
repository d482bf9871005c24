package wire

import (
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// DateTime is a timestamp of the wire: written in TimeLayout (RFC 3339, UTC, milliseconds), read
// as any RFC 3339 time. Generated wire types use it for every `format: date-time`, so that an
// answer cannot show a time at another precision or in another zone.
type DateTime struct{ time.Time }

// At returns t as a wire timestamp.
func At(t time.Time) DateTime { return DateTime{t} }

// MarshalJSON writes the time in TimeLayout.
func (d DateTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + Time(d.Time) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time.
func (d *DateTime) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("wire: a date-time must be a string, not %s", b)
	}
	t, err := domain.ParseTimestamp(string(b[1 : len(b)-1]))
	if err != nil {
		return fmt.Errorf("wire: %w", err)
	}
	d.Time = t
	return nil
}
