package integration

import (
	"encoding/json"
	"strings"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/wireformat"
)

// contactJSON is a contact as the integration API shows it, its members in the order of the
// spec: a struct, not an Object, so that a page of contacts encodes without a map per contact.
type contactJSON struct {
	ID           string            `json:"id"`
	Email        string            `json:"email"`
	FirstName    string            `json:"firstName"`
	LastName     string            `json:"lastName"`
	Phone        string            `json:"phone"`
	TagIDs       []string          `json:"tagIds"`
	CustomFields map[string]string `json:"customFields"`
	CreatedAt    string            `json:"createdAt"`
	UpdatedAt    string            `json:"updatedAt"`
}

// contactView is the view of c.
func contactView(c projections.Contact) contactJSON {
	return contactJSON{
		ID:           c.ID,
		Email:        c.Email,
		FirstName:    c.FirstName,
		LastName:     c.LastName,
		Phone:        c.Phone,
		TagIDs:       wireformat.List(c.TagIDs),
		CustomFields: wireformat.Object(c.CustomFields),
		CreatedAt:    wireformat.Time(c.CreatedAt),
		UpdatedAt:    wireformat.Time(c.UpdatedAt),
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
