package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
)

// schema is the receiver's whole store. Times are RFC 3339 text in UTC with milliseconds, which
// sorts as it reads.
//
//   - processed_events: the envelope ids already processed (a repeat is acknowledged, not applied).
//   - buyers: one per email, upserted by every payment (rule 3).
//   - entitlements: one per purchase, keyed by its billing subscription id, or by its transaction
//     id for a one-time tier: what the buyer has access to, and why it ended.
//   - users: the users the app created for SaaS signups, one per email (rule 8).
//   - activations: the SaaS signup activations and how their completion went.
//   - contacts: the contacts synced from form submissions (rule 9).
const schema = `
CREATE TABLE IF NOT EXISTS processed_events (
	event_id    TEXT PRIMARY KEY,
	type        TEXT NOT NULL,
	received_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS buyers (
	email      TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	contact_id TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entitlements (
	id                      TEXT PRIMARY KEY,
	email                   TEXT NOT NULL,
	product_id              TEXT NOT NULL,
	product_name            TEXT NOT NULL,
	tier_index              INTEGER NOT NULL,
	tier_name               TEXT NOT NULL,
	pricing_tier_id         TEXT NOT NULL,
	interval                TEXT NOT NULL,
	subscription_id         TEXT NOT NULL,
	transaction_id          TEXT NOT NULL,
	status                  TEXT NOT NULL CHECK (status IN ('active', 'cancelled', 'refunded')),
	purchased_at            TEXT NOT NULL,
	paid_periods            INTEGER NOT NULL,
	current_period_end      TEXT,
	cancel_at_period_end    INTEGER NOT NULL DEFAULT 0,
	cancel_scheduled_at     TEXT,
	ended_at                TEXT
);
CREATE INDEX IF NOT EXISTS entitlements_by_email ON entitlements (email, purchased_at);
CREATE TABLE IF NOT EXISTS users (
	id         TEXT PRIMARY KEY,
	email      TEXT NOT NULL UNIQUE,
	created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS activations (
	id              TEXT PRIMARY KEY,
	email           TEXT NOT NULL,
	user_id         TEXT NOT NULL,
	subscription_id TEXT NOT NULL,
	transaction_id  TEXT NOT NULL,
	status          TEXT NOT NULL,
	external_user_id TEXT,
	completed_at    TEXT
);
CREATE TABLE IF NOT EXISTS contacts (
	email         TEXT PRIMARY KEY,
	contact_id    TEXT NOT NULL,
	first_name    TEXT NOT NULL,
	last_name     TEXT NOT NULL,
	phone         TEXT NOT NULL,
	custom_fields TEXT NOT NULL,
	fields        TEXT NOT NULL,
	form_id       TEXT NOT NULL,
	submission_id TEXT NOT NULL,
	submitted_at  TEXT NOT NULL
);`

// timeFormat is how the store writes times.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// store is the receiver's SQLite database.
type store struct {
	db *sql.DB
}

// openStore opens (creating it if need be) the SQLite file at path. Everything goes through one
// connection: each envelope is one short transaction, and SQLite writes one at a time anyway.
func openStore(ctx context.Context, path string) (*store, error) {
	if path == "" {
		return nil, errors.New("store: no file path")
	}
	uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) +
		"?_txlock=immediate&_pragma=journal_mode(wal)&_pragma=busy_timeout(10000)&_pragma=synchronous(full)"
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: create the schema in %s: %w", path, err)
	}
	return &store{db: db}, nil
}

// Close closes the database.
func (s *store) Close() error { return s.db.Close() }

// processed tells whether the envelope was processed already.
func (s *store) processed(ctx context.Context, eventID string) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM processed_events WHERE event_id = ?`, eventID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: read processed events: %w", err)
	}
	return true, nil
}

// applyOnce runs apply in one transaction with the record that the envelope was processed, unless
// it was already: then nothing is applied and applied is false. A failed apply leaves nothing
// behind, the envelope unprocessed included, so that the service's retry applies it again.
func (s *store) applyOnce(ctx context.Context, eventID, eventType string, now time.Time, apply func(tx *sql.Tx) error) (applied bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: begin: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id, type, received_at) VALUES (?, ?, ?)
		ON CONFLICT (event_id) DO NOTHING`, eventID, eventType, formatTime(now))
	if err != nil {
		return false, fmt.Errorf("store: record event %s: %w", eventID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err // processed meanwhile by a concurrent copy of the delivery
	}
	if err := apply(tx); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: commit event %s: %w", eventID, err)
	}
	return true, nil
}

// user is a user of the app, created for a SaaS signup.
type user struct {
	ID    string
	Email string
}

// ensureUser returns the user of the email, creating it if there is none: a signup delivered
// twice, or two purchases of one buyer, find the same user.
func (s *store) ensureUser(ctx context.Context, email string, now time.Time) (user, error) {
	id := "usr_" + randomID()
	if _, err := s.db.ExecContext(ctx, `INSERT INTO users (id, email, created_at) VALUES (?, ?, ?) ON CONFLICT (email) DO NOTHING`,
		id, email, formatTime(now)); err != nil {
		return user{}, fmt.Errorf("store: create the user of %s: %w", email, err)
	}
	u := user{Email: email}
	if err := s.db.QueryRowContext(ctx, `SELECT id FROM users WHERE email = ?`, email).Scan(&u.ID); err != nil {
		return user{}, fmt.Errorf("store: read the user of %s: %w", email, err)
	}
	return u, nil
}

// randomID is 20 random characters of base32.
func randomID() string {
	var b [13]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))[:20]
}

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

// nullTime is a time for a nullable column: NULL for the zero time.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

// buyerView is what GET /entitlements shows of a buyer.
type buyerView struct {
	Email       string           `json:"email"`
	Name        string           `json:"name"`
	ContactID   string           `json:"contactId"`
	UserID      *string          `json:"userId"`  // the app's user, once a SaaS signup created it
	Active      []planView       `json:"active"`  // the plans the buyer has access to, oldest first
	Revoked     []planView       `json:"revoked"` // the plans that ended: cancelled or refunded
	Activations []activationView `json:"activations"`
	Contact     *contactView     `json:"contact"` // synced from form submissions; null before one
}

// planView is one entitlement: a purchase, with its billing subscription.
type planView struct {
	ProductID         string  `json:"productId"`
	ProductName       string  `json:"productName"`
	TierIndex         int     `json:"tierIndex"`
	TierName          string  `json:"tierName"`
	PricingTierID     string  `json:"pricingTierId"`
	Interval          string  `json:"interval"`
	SubscriptionID    string  `json:"subscriptionId"` // "" for a one-time tier
	TransactionID     string  `json:"transactionId"`  // of the purchase
	Status            string  `json:"status"`         // active, cancelled or refunded
	PurchasedAt       string  `json:"purchasedAt"`
	PaidPeriods       int     `json:"paidPeriods"`
	CurrentPeriodEnd  *string `json:"currentPeriodEnd"` // null for a one-time tier
	CancelAtPeriodEnd bool    `json:"cancelAtPeriodEnd"`
	CancelScheduledAt *string `json:"cancelScheduledAt"`
	EndedAt           *string `json:"endedAt"`
}

// activationView is a SaaS signup activation and what became of it.
type activationView struct {
	ID             string  `json:"id"`
	Status         string  `json:"status"` // completed, expired, or conflict (completed for another user)
	UserID         string  `json:"userId"`
	ExternalUserID *string `json:"externalUserId"` // as the service recorded it
	SubscriptionID string  `json:"subscriptionId"`
	CompletedAt    *string `json:"completedAt"`
}

// contactView is the contact as its latest form submission showed it.
type contactView struct {
	ContactID    string `json:"contactId"`
	FirstName    string `json:"firstName"`
	LastName     string `json:"lastName"`
	Phone        string `json:"phone"`
	CustomFields any    `json:"customFields"`
	Fields       any    `json:"fields"` // the submission's fields, as data.fields sent them
	FormID       string `json:"formId"`
	SubmissionID string `json:"submissionId"`
	SubmittedAt  string `json:"submittedAt"`
}

// errUnknownBuyer is returned for an email the receiver never heard of.
var errUnknownBuyer = errors.New("store: no buyer or contact with this email")

// buyer reads everything the receiver knows of an email, in one read transaction.
func (s *store) buyer(ctx context.Context, email string) (buyerView, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return buyerView{}, fmt.Errorf("store: begin: %w", err)
	}
	defer tx.Rollback()
	v := buyerView{Email: email, Active: []planView{}, Revoked: []planView{}, Activations: []activationView{}}
	known := false
	switch err := tx.QueryRowContext(ctx, `SELECT name, contact_id FROM buyers WHERE email = ?`, email).Scan(&v.Name, &v.ContactID); {
	case err == nil:
		known = true
	case !errors.Is(err, sql.ErrNoRows):
		return buyerView{}, fmt.Errorf("store: read buyer: %w", err)
	}
	var userID string
	switch err := tx.QueryRowContext(ctx, `SELECT id FROM users WHERE email = ?`, email).Scan(&userID); {
	case err == nil:
		v.UserID = &userID
	case !errors.Is(err, sql.ErrNoRows):
		return buyerView{}, fmt.Errorf("store: read user: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT product_id, product_name, tier_index, tier_name, pricing_tier_id, interval, subscription_id,
		transaction_id, status, purchased_at, paid_periods, current_period_end, cancel_at_period_end, cancel_scheduled_at, ended_at
		FROM entitlements WHERE email = ? ORDER BY purchased_at, id`, email)
	if err != nil {
		return buyerView{}, fmt.Errorf("store: read entitlements: %w", err)
	}
	for rows.Next() {
		var p planView
		if err := rows.Scan(&p.ProductID, &p.ProductName, &p.TierIndex, &p.TierName, &p.PricingTierID, &p.Interval, &p.SubscriptionID,
			&p.TransactionID, &p.Status, &p.PurchasedAt, &p.PaidPeriods, &p.CurrentPeriodEnd, &p.CancelAtPeriodEnd, &p.CancelScheduledAt, &p.EndedAt); err != nil {
			rows.Close()
			return buyerView{}, fmt.Errorf("store: read entitlements: %w", err)
		}
		if p.Status == statusActive {
			v.Active = append(v.Active, p)
		} else {
			v.Revoked = append(v.Revoked, p)
		}
	}
	if err := rows.Close(); err != nil {
		return buyerView{}, fmt.Errorf("store: read entitlements: %w", err)
	}
	rows, err = tx.QueryContext(ctx, `SELECT id, status, user_id, external_user_id, subscription_id, completed_at
		FROM activations WHERE email = ? ORDER BY id`, email)
	if err != nil {
		return buyerView{}, fmt.Errorf("store: read activations: %w", err)
	}
	for rows.Next() {
		var a activationView
		if err := rows.Scan(&a.ID, &a.Status, &a.UserID, &a.ExternalUserID, &a.SubscriptionID, &a.CompletedAt); err != nil {
			rows.Close()
			return buyerView{}, fmt.Errorf("store: read activations: %w", err)
		}
		v.Activations = append(v.Activations, a)
	}
	if err := rows.Close(); err != nil {
		return buyerView{}, fmt.Errorf("store: read activations: %w", err)
	}
	var c contactView
	var customFields, fields string
	switch err := tx.QueryRowContext(ctx, `SELECT contact_id, first_name, last_name, phone, custom_fields, fields, form_id, submission_id, submitted_at
		FROM contacts WHERE email = ?`, email).Scan(&c.ContactID, &c.FirstName, &c.LastName, &c.Phone, &customFields, &fields, &c.FormID, &c.SubmissionID, &c.SubmittedAt); {
	case err == nil:
		c.CustomFields, c.Fields = json.RawMessage(customFields), json.RawMessage(fields)
		v.Contact = &c
		known = true
	case !errors.Is(err, sql.ErrNoRows):
		return buyerView{}, fmt.Errorf("store: read contact: %w", err)
	}
	if !known {
		return buyerView{}, errUnknownBuyer
	}
	return v, nil
}
