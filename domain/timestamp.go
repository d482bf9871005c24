package domain

import (
	"strings"
	"time"
)

// ParseTimestamp reads an RFC 3339 timestamp of a request, fractional seconds optional. RFC 3339
// lets the "T" and "Z" be lower case (section 5.6), which Go's layout does not: they are read as
// upper case. No other letter can stand in a timestamp, so the whole text is.
func ParseTimestamp(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, strings.ToUpper(s))
}
