package domain

import "testing"

// EmailKey is the canonical caseless match: addresses that read the same, in any encoding or
// case, get one key; others keep theirs. For ASCII it is the old lower-case, so the keys, and
// the ids derived from them, of every ASCII address are what they were.
func TestEmailKey(t *testing.T) {
	for _, same := range [][]string{
		{"kate@example.com", "\u212Aate@example.com", " KATE@Example.COM "},
		{"\u00E5sa@example.com", "\u212Bsa@example.com", "a\u030Asa@example.com", "\u00C5SA@example.com"},
		{"\u03C3\u03BF\u03C6\u03B9\u03B1\u03C2@example.com", "\u03C3\u03BF\u03C6\u03B9\u03B1\u03C3@example.com", "\u03A3\u039F\u03A6\u0399\u0391\u03A3@example.com"},
		{"stra\u00DFe@example.com", "strasse@example.com", "STRASSE@example.com"},
		{"ren\u00E9@example.com", "rene\u0301@example.com"},
	} {
		for _, other := range same[1:] {
			if EmailKey(other) != EmailKey(same[0]) {
				t.Errorf("EmailKey(%+q) = %+q, EmailKey(%+q) = %+q", other, EmailKey(other), same[0], EmailKey(same[0]))
			}
		}
	}
	if EmailKey("ada@example.com") == EmailKey("adb@example.com") || EmailKey("\u00E5@x.io") == EmailKey("a@x.io") {
		t.Error("different addresses share a key")
	}
	for _, ascii := range []string{"Ada.Lovelace+tag@Example.COM", `"A b"@example.com`} {
		if EmailKey(ascii) != legacyEmailKey(ascii) || EmailKeyChanged(ascii) {
			t.Errorf("the key of ASCII %q changed", ascii)
		}
	}
	if !EmailKeyChanged("\u03C3\u03BF\u03C6\u03B9\u03B1\u03C2@example.com") || EmailKeyChanged("\u212Aate@example.com") {
		t.Error("EmailKeyChanged is wrong about final sigma or the KELVIN SIGN")
	}
}
