package domain

import (
	"strings"
	"testing"
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
