package domain

import "unicode/utf8"

// Input limits (decisions.md "Contacts and tags"). Lengths count characters, not bytes.
const (
	MaxNameLength        = 255
	MaxPhoneLength       = 50
	MaxCustomFieldValue  = 10000
	MaxTagsPerRequest    = 100
	MaxFieldsPerRequest  = 100
	MaxTextLength        = 10000
	maxAutomationsPerTag = 20
)

// checkLength fails when s has more than max characters.
func checkLength(field, s string, max int) error {
	if utf8.RuneCountInString(s) > max {
		return InvalidField(field, "%s must be at most %d characters", field, max)
	}
	return nil
}

// requireName checks a required, trimmed display name.
func requireName(field, s string) error {
	if s == "" {
		return InvalidField(field, "%s is required", field)
	}
	return checkLength(field, s, MaxNameLength)
}
