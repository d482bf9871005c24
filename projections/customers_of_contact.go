package projections

import (
	"context"
	"fmt"
)

// OfContact returns the checkout customers of one contact of an account, oldest first: a person
// who bought under the contact's email (a contact has few, usually one).
func (p *Customers) OfContact(ctx context.Context, accountID, contactID string) ([]Customer, error) {
	out, err := queryAll(ctx, p.db, scanCustomer, selectCustomers+` WHERE account_id = $1 AND contact_id = $2 ORDER BY seq`, accountID, contactID)
	if err != nil {
		return nil, fmt.Errorf("projections: customers of contact %s: %w", contactID, err)
	}
	return out, nil
}
