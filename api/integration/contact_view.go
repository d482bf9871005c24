package integration

import (
	"encoding/json"
	"strings"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
)

// A custom-field value of a request is a wire.CustomFieldValue, the raw JSON of a string, a
// number or a boolean: integrators send strings, and numbers and booleans are kept as their
// JSON text, every digit of it (a float64 would round 0.1000000000000000055511 and
// 12345678901234567890); null clears the field like an empty string.

// checkCustomFields refuses a custom-field value that is an object or an array (the one check
// the union's raw JSON leaves to the handler), before any member of the wrong type
// (httpapi.DecodeChecked).
func checkCustomFields(in *map[string]*wire.CustomFieldValue) *httpapi.FieldError {
	for _, v := range wire.Value(in) {
		if raw := customFieldText(v); strings.HasPrefix(raw, "{") || strings.HasPrefix(raw, "[") {
			return &httpapi.FieldError{Message: "customFields: values must be strings, numbers or booleans", Param: "customFields"}
		}
	}
	return nil
}

// customFields are the custom-field values of a request as the command takes them: a string as
// it is, a number or boolean as its JSON text, null as "".
func customFields(in *map[string]*wire.CustomFieldValue) map[string]string {
	if in == nil || *in == nil {
		return nil
	}
	out := make(map[string]string, len(*in))
	for k, v := range *in {
		out[k] = customFieldText(v)
		if strings.HasPrefix(out[k], `"`) {
			var text string
			_ = json.Unmarshal([]byte(out[k]), &text) // cannot fail: the decoder read it as JSON
			out[k] = text
		}
	}
	return out
}

// customFieldText is a custom-field value's JSON text, trimmed; "" for null.
func customFieldText(v *wire.CustomFieldValue) string {
	if v == nil {
		return ""
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return ""
	}
	raw := strings.TrimSpace(string(b))
	if raw == "null" {
		return ""
	}
	return raw
}
