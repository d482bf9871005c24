package domain

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
)

func TestNormalizeEmail(t *testing.T) {
	for _, c := range []struct {
		in, want string // want "" means refused
	}{
		{"ada@example.com", "ada@example.com"},
		{"  Ada.Lovelace+news@Example.COM ", "Ada.Lovelace+news@Example.COM"},
		{`"a b"@example.com`, `"a b"@example.com`},
		{`"a\"b"@example.com`, `"a\"b"@example.com`},
		{strings.Repeat("a", 64) + "@example.com", strings.Repeat("a", 64) + "@example.com"},
		{strings.Repeat("a", 65) + "@example.com", ""},
		{"Ada <ada@example.com>", ""},
		{"<ada@example.com>", ""},
		{"ada@example.com (Ada)", ""},
		{`"ada"@example.com`, ""}, // needless quotes: write ada@example.com
		{"ada", ""},
		{"ada@", ""},
		{"@example.com", ""},
		{"a@b@example.com", ""},
		{"", ""},
	} {
		got, err := NormalizeEmail(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("NormalizeEmail(%q) = %q, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// HiddenInEmails are characters that make an address look like another one, or read otherwise
// than it is: invisible ones, bidi controls and odd spaces. The API tests send them through every
// way an email enters.
var HiddenInEmails = []rune{
	'\u00AD', '\u034F', '\u061C', '\u115F', '\u1160', '\u17B4', '\u180B', '\u180E', '\u180F',
	'\u200B', '\u200C', '\u200D', '\u200E', '\u200F',
	'\u202A', '\u202B', '\u202C', '\u202D', '\u202E',
	'\u2060', '\u2061', '\u2062', '\u2063', '\u2064', '\u2065',
	'\u2066', '\u2067', '\u2068', '\u2069', '\u206A', '\u206F',
	'\u3164', '\uFE00', '\uFE0F', '\uFEFF', '\uFFA0', '\uFFF9', '\uFFFB',
	'\U0001BCA0', '\U0001D173', '\U000E0001', '\U000E0020', '\U000E0041', '\U000E007F', '\U000E0100', '\U000E01EF', '\U000E0FFF',
	'\u0085', '\u2028', '\u2029', '\u00A0', '\u2007', '\u202F', '\u3000', '\u2800',
}

func TestNormalizeEmailRefusesInvisibleAndDirectionChangingCharacters(t *testing.T) {
	for _, r := range HiddenInEmails {
		emails := []string{"ada" + string(r) + "@example.com", "ada@exa" + string(r) + "mple.com", `"a` + string(r) + `b"@example.com`}
		if !unicode.IsSpace(r) { // spaces around an address are trimmed, like any white space
			emails = append(emails, string(r)+"ada@example.com", "ada@example.com"+string(r))
		}
		for _, email := range emails {
			_, err := NormalizeEmail(email)
			want := fmt.Sprintf("email must not contain invisible or direction-changing characters (%U)", r)
			if err == nil || err.Error() != want {
				t.Errorf("NormalizeEmail(%+q) = %v, want %q", email, err, want)
			}
		}
	}
	// Letters of other scripts stay welcome (RFC 6532), and so does a plain space in quotes.
	for _, email := range []string{"josé@exämple.com", "用户@例子.广告", "אבג@example.com", `"a b"@example.com`} {
		if got, err := NormalizeEmail(email); err != nil || got != email {
			t.Errorf("NormalizeEmail(%q) = %q, %v", email, got, err)
		}
	}
	if _, err := NormalizeEmailField("contactEmail", "ada\u200b@example.com"); err == nil || !strings.HasPrefix(err.Error(), "contactEmail must not") {
		t.Errorf("NormalizeEmailField names its field: %v", err)
	}
}
