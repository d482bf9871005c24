package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// A contact's customers and activations are streams of their own whose later events show the
// person's values (a customer's new name, an activation's externalUserId) without being in the
// contact's history: only their first event names the contact (CustomerCreated,
// ActivationIssued), and of those only ActivationIssued is indexed under it (domain.ContactEvent).
// Whoever must reach everything of a person (the export, the erasure of kept Idempotency-Key
// answers) finds them through the contact's own entries: its purchases name its customer and
// activation, its ActivationIssued its activation. Ids are never sealed, so this reads no key;
// logs written before these events carried contactId are read the same.

// readContactStreams reads the events naming a contact (events_by_contact) that name one of its
// customers or activations. The account and the type are tested in a form no index can use, as in
// readContactSubscriptions: "account_id = ? AND type IN (…)" is events_by_account_type's, every
// purchase of the account, where the contact's few entries are what to read (plans_test.go
// checks the plan).
const readContactStreams = `SELECT data FROM events WHERE contact_id = $1 AND COALESCE(account_id, '') = $2
	AND COALESCE(type, '') IN ('ActivationIssued', 'CheckoutPurchased', 'CheckoutRebilled', 'CheckoutRefunded')`

// contactStreamPaths are where those events name the customer or the activation.
var contactStreamPaths = []string{"customerId", "activationId", "activation.activationId"}

// StreamsOfContact returns the ids of a contact's customers and activations (see above), found
// from the log, erased contacts included.
func (s *Store) StreamsOfContact(ctx context.Context, accountID, contactID string) ([]string, error) {
	rows, err := s.db.Read.QueryContext(ctx, readContactStreams, contactID, accountID)
	if err != nil {
		return nil, fmt.Errorf("eventstore: streams of %s: %w", contactID, err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	var ids []string
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("eventstore: streams of %s: %w", contactID, err)
		}
		for _, r := range gjson.GetMany(data, contactStreamPaths...) {
			if id := r.String(); r.Type == gjson.String && id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventstore: streams of %s: %w", contactID, err)
	}
	return ids, nil
}

// ContactOfStream returns the contact a customer's or an activation's stream belongs to: the
// contactId of its first event (CustomerCreated, ActivationIssued). "" for a stream of another
// kind, or none.
func (s *Store) ContactOfStream(ctx context.Context, streamID string) (string, error) {
	if !strings.HasPrefix(streamID, "cus_") && !strings.HasPrefix(streamID, "act_") {
		return "", nil
	}
	var data string
	err := s.db.Read.QueryRowContext(ctx, `SELECT data FROM events WHERE stream_id = $1 AND version = 1`, streamID).Scan(&data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("eventstore: contact of %s: %w", streamID, err)
	}
	return gjson.Get(data, "contactId").String(), nil
}
