package webhooks

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// ErasedError is the error of a delivery given up because its person was erased.
const ErasedError = "erased"

// eraseDeliveries forgets an erased contact in the outbox (decisions.md "Erasure"): every
// delivery of one of the contact's events (its stream, and the events that name it: leads,
// submissions, bookings, payments) loses its body, and those still pending are given up, failed
// with error "erased". Deliveries already made are not recalled; the attempt log holds no body.
func eraseDeliveries(ctx context.Context, tx *sql.Tx, r domain.Recorded) error {
	e, err := r.Decode()
	if err != nil {
		return fmt.Errorf("webhooks: decode %s at %d: %w", r.Type, r.Position, err)
	}
	erased := e.(domain.ContactErased)
	now := time.Now().UnixMilli()
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET body = '', body_sealed = 0,
			last_error = CASE WHEN status = 'pending' THEN $1 ELSE last_error END,
			status = CASE WHEN status = 'pending' THEN 'failed' ELSE status END,
			updated_at = $2
		WHERE account_id = $3 AND event_id IN (SELECT event_id FROM events WHERE account_id = $3 AND (stream_id = $4 OR contact_id = $4))`,
		ErasedError, now, erased.AccountID, erased.ContactID); err != nil {
		return fmt.Errorf("webhooks: forget erased contact %s: %w", erased.ContactID, err)
	}
	return nil
}
