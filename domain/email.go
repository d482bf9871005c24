package domain

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
)

// MaxEmailLength is the longest address SMTP can carry (RFC 5321 path limit).
const MaxEmailLength = 254

// maxLocalPartLength is the longest part before the @ that SMTP carries (RFC 5321 4.5.3.1.1).
const maxLocalPartLength = 64

// NormalizeEmail trims an address and checks that it is a plain addr-spec ("name@example.com",
// or with a quoted local part, "\"a b\"@example.com"; no display name, no angle brackets, no
// comments) with no hidden characters. It keeps the casing it was given. Errors name the field
// "email".
func NormalizeEmail(raw string) (string, error) {
	return NormalizeEmailField("email", raw)
}

// NormalizeEmailField is NormalizeEmail for a request member of another name (contactEmail, a
// form field), which its errors name.
func NormalizeEmailField(field, raw string) (string, error) {
	email := strings.TrimSpace(raw)
	if email == "" {
		return "", InvalidField(field, "%s is required", field)
	}
	if len(email) > MaxEmailLength {
		return "", InvalidField(field, "%s must be at most %d characters", field, MaxEmailLength)
	}
	if r, ok := hiddenRune(email); ok {
		return "", InvalidField(field, "%s must not contain invisible or direction-changing characters (%U)", field, r)
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Name != "" || !isBareAddrSpec(email, addr.Address) {
		return "", InvalidField(field, "%s is not a valid email address", field)
	}
	if at := strings.LastIndex(email, "@"); at > maxLocalPartLength {
		return "", InvalidField(field, "%s must have at most %d characters before the @", field, maxLocalPartLength)
	}
	return email, nil
}

// hidden are the characters an address may not hold because they cannot be seen, or change how
// what follows is shown: with one, an address looks like another contact's (U+200B inside
// "ada@example.com") or reads differently from what it is (U+202E reverses what follows).
// net/mail accepts any non-ASCII character (RFC 6532), so they are refused here:
//   - format characters (Cf): zero-width space, joiners and non-joiners (U+200B-U+200F), the
//     bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), the Arabic letter
//     mark (U+061C), word joiner and invisible operators (U+2060-U+2064), the byte order mark
//     (U+FEFF), the soft hyphen (U+00AD), the Mongolian vowel separator (U+180E) and the tag
//     characters (U+E0001, U+E0020-U+E007F);
//   - the rest of Unicode's Default_Ignorable_Code_Point: variation selectors, Hangul fillers
//     (U+3164, U+FFA0), the combining grapheme joiner (U+034F), the reserved U+E0000-U+E0FFF;
//   - control characters (Cc), line and paragraph separators (Zl, Zp), and every space but
//     U+0020 (no-break and other-width spaces, which a quoted local part would otherwise hold);
//   - U+2800 BRAILLE PATTERN BLANK, a symbol that renders as a blank.
var hidden = rangetable.Merge(
	unicode.Cf,
	unicode.Other_Default_Ignorable_Code_Point,
	unicode.Variation_Selector,
	unicode.Cc,
	unicode.Zl,
	unicode.Zp,
	unicode.Zs,
	rangetable.New('\u2800'),
)

// hiddenRune returns the first hidden character of s.
func hiddenRune(s string) (rune, bool) {
	for _, r := range s {
		if r != ' ' && unicode.Is(hidden, r) {
			return r, true
		}
	}
	return 0, false
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

// EmailKey is how emails are compared, everywhere: trimmed, then Unicode's canonical caseless
// match (Unicode 3.13, D145), written in NFC: NFD, full case folding, NFC. Two addresses that
// read the same are one key whatever their encoding ("e" and U+0301 or "é"; U+212A KELVIN SIGN
// or "K") and whatever their case, full folding included ("ς" and "σ", "ß" and "ss"). The
// local part of an address is case-sensitive for SMTP, but no mail provider tells "Ada" from
// "ada", and people type either: a contact is one person, whatever they typed (docs/
// integration-api.md "Contacts").
func EmailKey(email string) string {
	email = strings.TrimSpace(email)
	if isASCII(email) {
		return strings.ToLower(email) // the same, without the three passes
	}
	return norm.NFC.String(cases.Fold().String(norm.NFD.String(email)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// legacyEmailKey is how emails were compared before EmailKey: a plain lower-case. Contacts and
// customers created then are named by it (ContactIDFor, CustomerIDFor). For every ASCII address,
// and almost every other, both keys are equal.
func legacyEmailKey(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}

// EmailKeys are the keys an email's contact or customer may be named by in a read model:
// EmailKey, and the old key when the normalisation changed it (the same key twice otherwise, so
// that a look-up is always one statement of two parameters).
func EmailKeys(email string) [2]string {
	return [2]string{EmailKey(email), legacyEmailKey(email)}
}

// ContactEmailKey is the key a contact's read model row is named by: the one its id derives
// from, the old key for a contact created under it (LegacyContactIDFor). Keys then stay as unique
// as ids, and a row written before the normalisation keeps its key.
func ContactEmailKey(accountID, contactID, email string) string {
	if legacy, changed := LegacyContactIDFor(accountID, email); changed && legacy == contactID {
		return legacyEmailKey(email)
	}
	return EmailKey(email)
}

// CustomerEmailKey is ContactEmailKey for a customer.
func CustomerEmailKey(accountID, customerID, email string) string {
	if legacy, changed := LegacyCustomerIDFor(accountID, email); changed && legacy == customerID {
		return legacyEmailKey(email)
	}
	return EmailKey(email)
}

// EmailKeyChanged tells whether the normalisation changed an email's key (legacyEmailKey and
// EmailKey differ): only such an address may name a contact or a customer created under the
// old key.
func EmailKeyChanged(email string) bool {
	return legacyEmailKey(email) != EmailKey(email)
}
