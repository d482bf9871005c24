package integration

import (
	"encoding/json"
	"strings"

	"github.com/funnelhq/funnel/api/httpapi"
)

// scalar is a custom-field value: integrators send strings, and numbers and booleans are kept
// as their JSON text; null clears the field like an empty string.
type scalar string

func (s *scalar) UnmarshalJSON(b []byte) error {
	raw := strings.TrimSpace(string(b))
	switch {
	case raw == "null":
		*s = ""
	case strings.HasPrefix(raw, `"`):
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		*s = scalar(str)
	case strings.HasPrefix(raw, "{"), strings.HasPrefix(raw, "["):
		return &httpapi.FieldError{Message: "customFields: values must be strings, numbers or booleans", Param: "customFields"}
	default:
		*s = scalar(raw)
	}
	return nil
}

func customFields(in map[string]scalar) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = string(v)
	}
	return out
}
