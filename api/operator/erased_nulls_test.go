package operator

import "testing"

// An erased value, stored as null and encoded anew from the event's Go value as "", is null
// again, at any depth and in arrays; every other member is left as it was encoded.
func TestKeepNullsPutsBackTheNullsOfErasedValues(t *testing.T) {
	for _, c := range []struct{ stored, encoded, want string }{
		{`{"customer":{"email":null,"name":null,"contactId":"ct_1"},"token":"secret"}`,
			`{"token":"[redacted]","customer":{"email":"","name":"","contactId":"ct_1"}}`,
			`{"token":"[redacted]","customer":{"email":null,"name":null,"contactId":"ct_1"}}`},
		{`{"fields":[{"value":null},{"value":"kept"},{"value":null}]}`,
			`{"fields":[{"value":""},{"value":"kept"},{"value":""}]}`,
			`{"fields":[{"value":null},{"value":"kept"},{"value":null}]}`},
		{`{"email":null,"name":"x","secret":null}`, `{"email":"","name":"","secret":"[redacted]"}`, `{"email":null,"name":"","secret":"[redacted]"}`},
		{`{"a":1}`, `{"a":1,"b":""}`, `{"a":1,"b":""}`},
	} {
		if got := string(keepNulls([]byte(c.stored), []byte(c.encoded))); got != c.want {
			t.Errorf("keepNulls(%s, %s) = %s, want %s", c.stored, c.encoded, got, c.want)
		}
	}
}
