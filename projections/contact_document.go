package projections

import (
	"github.com/goccy/go-json"

	"github.com/funnelhq/funnel/api/wire"
)

// ContactJSON is a contact as the integration API shows it (integration-api.md section 3), its
// members in the spec's order: a struct, not a map, so that it encodes without one. The read
// model keeps it encoded in each row (Document): a change to it comes with a migration that sets
// contacts.document to NULL (the list then shows contacts from their columns) and a rebuild of
// the contacts read model.
type ContactJSON struct {
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

// View is c as the integration API shows it.
func (c Contact) View() ContactJSON {
	return ContactJSON{
		ID:           c.ID,
		Email:        c.Email,
		FirstName:    c.FirstName,
		LastName:     c.LastName,
		Phone:        c.Phone,
		TagIDs:       wire.List(c.TagIDs),
		CustomFields: wire.Object(c.CustomFields),
		CreatedAt:    wire.Time(c.CreatedAt),
		UpdatedAt:    wire.Time(c.UpdatedAt),
	}
}

// Document is c's view encoded as the API encodes its answers (goccy/go-json, like encoding/json:
// map keys sorted, HTML characters escaped). The read model keeps each contact's document in its
// row, written with it, so that a page of contacts is its rows' documents put side by side: one
// column read per contact instead of eleven decoded and encoded again.
func (c Contact) Document() ([]byte, error) {
	return json.Marshal(c.View())
}
