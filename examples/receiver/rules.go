package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/funnelhq/funnel/client"
)

// The integration rules for receivers (integration-api.md section 6), one method per event.
//
// The store keeps one entitlement per purchase: its billing subscription (or, for a one-time
// tier, its transaction) is its key, and each checkout event changes only the entitlement of its
// own subscription. That makes the outcome the same in any order across subscriptions: the
// service delivers one subscription's events in order, but nothing orders two subscriptions, and
// a plan change (rule 10) is two subscriptions. Each envelope is applied once, in one transaction
// with the record that it was (store.applyOnce); a repeat changes nothing.

// Entitlement statuses: active grants access, the others have revoked it.
const (
	statusActive    = "active"
	statusCancelled = "cancelled"
	statusRefunded  = "refunded"
)

// errMalformed is returned for a body that is not an envelope with an id and a type.
var errMalformed = errors.New("rules: the body is not a webhook envelope")

// rules applies the webhooks the receiver accepted to its store.
type rules struct {
	store  *store
	funnel *funnelAPI
	now    func() time.Time
	log    *slog.Logger
}

// apply applies one verified envelope, once. It returns false for an envelope processed before
// (nothing changes). An error leaves the envelope unprocessed: the receiver answers 5xx and the
// service retries it.
func (r *rules) apply(ctx context.Context, body []byte) (applied bool, err error) {
	var envelope client.WebhookEvent
	var head struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if json.Unmarshal(body, &envelope) != nil || json.Unmarshal(body, &head) != nil || head.ID == "" || head.Type == "" {
		return false, errMalformed
	}
	if done, err := r.store.processed(ctx, head.ID); err != nil || done {
		return false, err
	}
	once := func(apply func(tx *sql.Tx) error) (bool, error) {
		return r.store.applyOnce(ctx, head.ID, head.Type, r.now(), apply)
	}
	// The type member says which schema the envelope is (the discriminator of WebhookEvent).
	switch head.Type {
	case "checkout.purchased":
		e, err := envelope.AsCheckoutPurchasedEvent()
		if err != nil {
			return false, errMalformed
		}
		return r.purchased(ctx, head.ID, e)
	case "checkout.rebilled":
		e, err := envelope.AsCheckoutRebilledEvent()
		if err != nil {
			return false, errMalformed
		}
		return once(func(tx *sql.Tx) error { return rebilled(ctx, tx, e) })
	case "checkout.refunded":
		e, err := envelope.AsCheckoutRefundedEvent()
		if err != nil {
			return false, errMalformed
		}
		return once(func(tx *sql.Tx) error { return refunded(ctx, tx, e) })
	case "checkout.subscription_cancel_scheduled":
		e, err := envelope.AsCheckoutSubscriptionCancelScheduledEvent()
		if err != nil {
			return false, errMalformed
		}
		return once(func(tx *sql.Tx) error { return cancelScheduled(ctx, tx, e) })
	case "checkout.subscription_cancelled":
		e, err := envelope.AsCheckoutSubscriptionCancelledEvent()
		if err != nil {
			return false, errMalformed
		}
		return once(func(tx *sql.Tx) error { return cancelled(ctx, tx, e) })
	case "form.submitted":
		e, err := envelope.AsFormSubmittedEvent()
		if err != nil {
			return false, errMalformed
		}
		return once(func(tx *sql.Tx) error { return formSubmitted(ctx, tx, e) })
	default:
		// scheduling.booked, which no rule asks anything of, or a type this receiver does not know
		// (the service added one): acknowledged and recorded, nothing else.
		r.log.Info("nothing to apply", "type", head.Type, "id", head.ID)
		return once(func(*sql.Tx) error { return nil })
	}
}

// emailKey is how the receiver keys a buyer: the service matches emails case-insensitively.
func emailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// purchased applies checkout.purchased. Rules 1-3: the buyer is data.customer.email, upserted;
// the plan is data.product.id with the tier fields, stored with the subscription id. Rule 8: a
// SaaS signup creates the app's user and completes the activation first. The calls to the API
// happen before the transaction and are idempotent, so a retried delivery may repeat them.
func (r *rules) purchased(ctx context.Context, eventID string, e client.CheckoutPurchasedEvent) (bool, error) {
	d := e.Data
	email := emailKey(d.Customer.Email)
	interval, err := r.funnel.interval(ctx, d.Product.Id, d.Pricing.PricingTierId)
	if err != nil {
		return false, err
	}
	var signup *signupResult
	if d.Activation != nil {
		if signup, err = r.signUp(ctx, email, d.Activation.Token); err != nil {
			return false, err
		}
	}
	return r.store.applyOnce(ctx, eventID, string(e.Type), r.now(), func(tx *sql.Tx) error {
		if err := upsertBuyer(ctx, tx, email, d.Customer.Name, d.Customer.ContactId, e.CreatedAt); err != nil {
			return err
		}
		id, subscriptionID := entitlementKey(d.Transaction)
		var periodEnd any // a one-time tier has no period
		if interval != client.IntervalOneTime {
			periodEnd = formatTime(periodEndAfter(e.CreatedAt, interval, 1))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO entitlements (id, email, product_id, product_name, tier_index, tier_name,
			pricing_tier_id, interval, subscription_id, transaction_id, status, purchased_at, paid_periods, current_period_end)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT (id) DO NOTHING`,
			id, email, d.Product.Id, d.Product.Name, d.Pricing.TierIndex, d.Pricing.TierName, d.Pricing.PricingTierId, string(interval),
			subscriptionID, d.Transaction.Id, statusActive, formatTime(e.CreatedAt), periodEnd); err != nil {
			return fmt.Errorf("rules: record the purchase %s: %w", d.Transaction.Id, err)
		}
		if signup != nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO activations (id, email, user_id, subscription_id, transaction_id, status,
				external_user_id, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET status = excluded.status, external_user_id = excluded.external_user_id, completed_at = excluded.completed_at`,
				signup.activationID, email, signup.userID, subscriptionID, d.Transaction.Id, signup.status, signup.externalUserID, nullTime(signup.completedAt)); err != nil {
				return fmt.Errorf("rules: record the activation %s: %w", signup.activationID, err)
			}
		}
		return nil
	})
}

// entitlementKey is the key of a payment's entitlement, and its subscription id ("" for a
// one-time tier, whose key is its transaction).
func entitlementKey(t client.CheckoutTransaction) (id, subscriptionID string) {
	if t.SubscriptionId != "" {
		return t.SubscriptionId, t.SubscriptionId
	}
	return t.Id, ""
}

// upsertBuyer creates or updates the buyer of an email (rule 3), keeping the name of the latest
// payment whatever order payments of several subscriptions arrive in.
func upsertBuyer(ctx context.Context, tx *sql.Tx, email, name, contactID string, at time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO buyers (email, name, contact_id, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (email) DO UPDATE SET name = excluded.name, contact_id = excluded.contact_id, updated_at = excluded.updated_at
		WHERE excluded.updated_at >= buyers.updated_at`, email, name, contactID, formatTime(at)); err != nil {
		return fmt.Errorf("rules: upsert the buyer %s: %w", email, err)
	}
	return nil
}

// rebilled applies checkout.rebilled (rule 4): the subscription's entitlement, matched by
// data.transaction.subscriptionId, has one more period paid and its period end moves on. A rebill
// pays for access again, so it restores an entitlement a refund revoked; a cancelled
// subscription is never rebilled. Should the purchase never have reached the receiver (its
// delivery given up after its last attempt), the rebill creates the entitlement from its own
// members, with the period end unknown.
func rebilled(ctx context.Context, tx *sql.Tx, e client.CheckoutRebilledEvent) error {
	d := e.Data
	email := emailKey(d.Customer.Email)
	if err := upsertBuyer(ctx, tx, email, d.Customer.Name, d.Customer.ContactId, e.CreatedAt); err != nil {
		return err
	}
	var purchasedAt, interval string
	var paid int
	err := tx.QueryRowContext(ctx, `SELECT purchased_at, interval, paid_periods FROM entitlements WHERE id = ?`, d.Transaction.SubscriptionId).
		Scan(&purchasedAt, &interval, &paid)
	if err == sql.ErrNoRows {
		_, err = tx.ExecContext(ctx, `INSERT INTO entitlements (id, email, product_id, product_name, tier_index, tier_name,
			pricing_tier_id, interval, subscription_id, transaction_id, status, purchased_at, paid_periods)
			VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, '', ?, ?, 1)`,
			d.Transaction.SubscriptionId, email, d.Product.Id, d.Product.Name, d.Pricing.TierIndex, d.Pricing.TierName,
			d.Pricing.PricingTierId, d.Transaction.SubscriptionId, statusActive, formatTime(e.CreatedAt))
		if err != nil {
			return fmt.Errorf("rules: record the rebill of %s: %w", d.Transaction.SubscriptionId, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("rules: read the subscription %s: %w", d.Transaction.SubscriptionId, err)
	}
	var periodEnd any
	if start, err := time.Parse(timeFormat, purchasedAt); err == nil && interval != "" {
		periodEnd = formatTime(periodEndAfter(start, client.Interval(interval), paid+1))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE entitlements SET paid_periods = paid_periods + 1, current_period_end = ?,
		status = CASE WHEN status = ? THEN ? ELSE status END, ended_at = CASE WHEN status = ? THEN NULL ELSE ended_at END
		WHERE id = ?`, periodEnd, statusRefunded, statusActive, statusRefunded, d.Transaction.SubscriptionId); err != nil {
		return fmt.Errorf("rules: extend the subscription %s: %w", d.Transaction.SubscriptionId, err)
	}
	return nil
}

// periodEndAfter is when the n-th period of a plan bought at start ends: n months after the start
// (n years for a yearly tier; split plans are paid monthly), a day the month lacks clamped to its
// last day, as the service counts (docs/checkout.md, "Period arithmetic"). The receiver counts
// from the purchase's createdAt, within moments of the service's own start of the period; a
// scheduled cancellation then tells the exact end (cancelScheduled).
func periodEndAfter(start time.Time, interval client.Interval, n int) time.Time {
	months := n
	if interval == client.IntervalYear {
		months = 12 * n
	}
	start = start.UTC()
	year, month, day := start.Date()
	first := time.Date(year, month+time.Month(months), 1, start.Hour(), start.Minute(), start.Second(), start.Nanosecond(), time.UTC)
	lastDay := first.AddDate(0, 1, -1).Day()
	return first.AddDate(0, 0, min(day, lastDay)-1)
}

// refunded applies checkout.refunded (rule 7): the access of that purchase is revoked, whether the
// refund returned all of the payment or part of it. A refund of a rebill revokes its
// subscription's entitlement too; a later rebill restores it. A cancelled entitlement stays
// cancelled.
func refunded(ctx context.Context, tx *sql.Tx, e client.CheckoutRefundedEvent) error {
	id, _ := entitlementKey(e.Data.Transaction)
	if _, err := tx.ExecContext(ctx, `UPDATE entitlements SET status = ?, ended_at = ? WHERE id = ? AND status = ?`,
		statusRefunded, formatTime(e.Data.Refund.RefundedAt), id, statusActive); err != nil {
		return fmt.Errorf("rules: revoke the refunded purchase %s: %w", id, err)
	}
	return nil
}

// cancelScheduled applies checkout.subscription_cancel_scheduled (rule 5): access stays; the
// entitlement is only flagged, with the exact end of the paid period.
func cancelScheduled(ctx context.Context, tx *sql.Tx, e client.CheckoutSubscriptionCancelScheduledEvent) error {
	s := e.Data.Subscription
	if _, err := tx.ExecContext(ctx, `UPDATE entitlements SET cancel_at_period_end = ?, cancel_scheduled_at = ?, current_period_end = ?
		WHERE id = ?`, s.CancelAtPeriodEnd, formatTime(s.ScheduledAt), formatTime(s.CurrentPeriodEnd), s.Id); err != nil {
		return fmt.Errorf("rules: flag the subscription %s: %w", s.Id, err)
	}
	return nil
}

// cancelled applies checkout.subscription_cancelled (rule 6): the access tied to
// data.subscription.id is revoked. A newer active purchase of another plan is another
// entitlement, which this leaves as it is: after an upgrade or a downgrade (rule 10: buy the new
// plan, cancel the old, or the other way round) the buyer keeps the new plan only.
func cancelled(ctx context.Context, tx *sql.Tx, e client.CheckoutSubscriptionCancelledEvent) error {
	s := e.Data.Subscription
	if _, err := tx.ExecContext(ctx, `UPDATE entitlements SET status = ?, ended_at = ? WHERE id = ?`,
		statusCancelled, formatTime(s.CancelledAt), s.Id); err != nil {
		return fmt.Errorf("rules: revoke the subscription %s: %w", s.Id, err)
	}
	return nil
}

// formSubmitted applies form.submitted (rule 9): the contact (data.contact) and the submission's
// fields (data.fields) are synced, keyed by email. Submissions are not ordered, so a submission
// older than the one synced changes nothing. Without an email answer there is no contact to sync.
func formSubmitted(ctx context.Context, tx *sql.Tx, e client.FormSubmittedEvent) error {
	d := e.Data
	email := emailKey(d.Contact.Email)
	if email == "" {
		return nil
	}
	customFields, err := json.Marshal(d.Contact.CustomFields)
	if err != nil {
		return fmt.Errorf("rules: encode custom fields: %w", err)
	}
	fields, err := json.Marshal(d.Fields)
	if err != nil {
		return fmt.Errorf("rules: encode fields: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO contacts (email, contact_id, first_name, last_name, phone, custom_fields, fields,
		form_id, submission_id, submitted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (email) DO UPDATE SET contact_id = excluded.contact_id, first_name = excluded.first_name,
			last_name = excluded.last_name, phone = excluded.phone, custom_fields = excluded.custom_fields, fields = excluded.fields,
			form_id = excluded.form_id, submission_id = excluded.submission_id, submitted_at = excluded.submitted_at
		WHERE excluded.submitted_at >= contacts.submitted_at`,
		email, d.Contact.ContactId, d.Contact.FirstName, d.Contact.LastName, d.Contact.Phone, string(customFields), string(fields),
		d.FormId, d.SubmissionId, formatTime(d.SubmittedAt)); err != nil {
		return fmt.Errorf("rules: sync the contact %s: %w", email, err)
	}
	return nil
}
