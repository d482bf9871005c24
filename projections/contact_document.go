package projections

import (
	"github.com/goccy/go-json"

	"github.com/funnelhq/funnel/api/wire"
)

// View is c as the integration API shows it (integration-api.md section 3): the generated wire
// type. The read model keeps it encoded in each row (Document): a change to it comes with a
// migration that sets contacts.document to NULL (the list then shows contacts from their
// columns) and a rebuild of the contacts read model.
func (c Contact) View() wire.Contact {
	return wire.Contact{
		Id:           c.ID,
		Email:        c.Email,
		FirstName:    c.FirstName,
		LastName:     c.LastName,
		Phone:        c.Phone,
		TagIds:       wire.List(c.TagIDs),
		CustomFields: wire.Object(c.CustomFields),
		CreatedAt:    wire.At(c.CreatedAt),
		UpdatedAt:    wire.At(c.UpdatedAt),
	}
}

// Document is c's view encoded as the API encodes its answers (goccy/go-json, like encoding/json:
// map keys sorted, HTML characters escaped). The read model keeps each contact's document in its
// row, written with it, so that a page of contacts is its rows' documents put side by side: one
// column read per contact instead of eleven decoded and encoded again.
func (c Contact) Document() ([]byte, error) {
	return json.Marshal(c.View())
}
