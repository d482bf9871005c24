package domain

import (
	"net/mail"
	"strings"
)

// MaxEmailLength is the longest address SMTP can carry (RFC 5321 path limit).
const MaxEmailLength = 254

// NormalizeEmail trims an address and checks that it is a plain addr-spec ("name@example.com",
// no display name, no angle brackets). It keeps the casing it was given.
func NormalizeEmail(raw string) (string, error) {
	email := strings.TrimSpace(raw)
	if email == "" {
		return "", Invalid("email is required")
	}
	if len(email) > MaxEmailLength {
		return "", Invalid("email must be at most %d characters", MaxEmailLength)
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Name != "" || addr.Address != email || !strings.Contains(email, "@") {
		return "", Invalid("email is not a valid address")
	}
	return email, nil
}

// EmailKey is how emails are compared: case-insensitively, after trimming.
func EmailKey(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}
