package integration

import (
	"encoding/json"
	"strings"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/wireformat"
)

// contactView is a contact as the integration API shows it.
func contactView(c projections.Contact) httpapi.Object {
	return httpapi.Object{
		"id":           c.ID,
		"email":        c.Email,
		"firstName":    c.FirstName,
		"lastName":     c.LastName,
		"phone":        c.Phone,
		"tagIds":       wireformat.List(c.TagIDs),
		"customFields": wireformat.Object(c.CustomFields),
		"createdAt":    wireformat.Time(c.CreatedAt),
		"updatedAt":    wireformat.Time(c.UpdatedAt),
	}
}

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
		return &httpapi.FieldError{Message: "customFields: values must be strings, numbers or booleans"}
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
