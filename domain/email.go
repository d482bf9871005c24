package domain

import (
	"net/mail"
	"strings"
)

// MaxEmailLength is the longest address SMTP can carry (RFC 5321 path limit).
const MaxEmailLength = 254

// maxLocalPartLength is the longest part before the @ that SMTP carries (RFC 5321 4.5.3.1.1).
const maxLocalPartLength = 64

// NormalizeEmail trims an address and checks that it is a plain addr-spec ("name@example.com",
// or with a quoted local part, "\"a b\"@example.com"; no display name, no angle brackets, no
// comments). It keeps the casing it was given.
func NormalizeEmail(raw string) (string, error) {
	email := strings.TrimSpace(raw)
	if email == "" {
		return "", Invalid("email is required")
	}
	if len(email) > MaxEmailLength {
		return "", Invalid("email must be at most %d characters", MaxEmailLength)
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Name != "" || !isBareAddrSpec(email, addr.Address) {
		return "", Invalid("email is not a valid address")
	}
	if at := strings.LastIndex(email, "@"); at > maxLocalPartLength {
		return "", Invalid("email must have at most %d characters before the @", maxLocalPartLength)
	}
	return email, nil
}

// isBareAddrSpec tells whether email is exactly the addr-spec that net/mail parsed out of it, and
// not a wider form it also accepts (angle brackets, comments, needless quotes). net/mail gives a
// quoted local part without its quotes; formatting the address quotes it again.
func isBareAddrSpec(email, parsed string) bool {
	if email == parsed {
		return true
	}
	formatted := (&mail.Address{Address: parsed}).String() // "<addr-spec>"
	return strings.HasPrefix(email, `"`) && formatted == "<"+email+">"
}

// EmailKey is how emails are compared: case-insensitively, after trimming.
func EmailKey(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}
