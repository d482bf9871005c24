package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// Subscriptions reads the subscriptions the projector keeps.
type Subscriptions struct {
	db *sql.DB
}

// NewSubscriptions reads from db.
func NewSubscriptions(db *sql.DB) *Subscriptions { return &Subscriptions{db: db} }

// Subscription is a webhook subscription as the APIs show it (never its secret).
type Subscription struct {
	ID           string
	AccountID    string
	Kind         string
	URL          string
	Events       []string
	Filters      domain.WebhookFilters
	Status       string // active, disabled, deleted
	StatusReason string
	CreatedAt    time.Time
}

const selectSubscriptions = `SELECT id, account_id, kind, url, events, filters, status, status_reason, created_at FROM webhook_subscriptions`

// Get returns one subscription of any account; the caller checks the account.
func (s *Subscriptions) Get(ctx context.Context, id string) (Subscription, error) {
	subs, err := s.query(ctx, selectSubscriptions+` WHERE id = $1`, id)
	if err != nil {
		return Subscription{}, err
	}
	if len(subs) == 0 {
		return Subscription{}, ErrNotFound
	}
	return subs[0], nil
}

// List returns an account's subscriptions that are not deleted, oldest first; kind "" lists
// every kind.
func (s *Subscriptions) List(ctx context.Context, accountID, kind string) ([]Subscription, error) {
	if kind == "" {
		return s.query(ctx, selectSubscriptions+` WHERE account_id = $1 AND status <> 'deleted' ORDER BY position`, accountID)
	}
	return s.query(ctx, selectSubscriptions+` WHERE account_id = $1 AND status <> 'deleted' AND kind = $2 ORDER BY position`, accountID, kind)
}

func (s *Subscriptions) query(ctx context.Context, q string, args ...any) ([]Subscription, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("webhooks: query subscriptions: %w", err)
	}
	defer rows.Close()
	var out []Subscription
	for rows.Next() {
		var sub Subscription
		var events, filters string
		var created int64
		if err := rows.Scan(&sub.ID, &sub.AccountID, &sub.Kind, &sub.URL, &events, &filters, &sub.Status, &sub.StatusReason, &created); err != nil {
			return nil, fmt.Errorf("webhooks: scan subscription: %w", err)
		}
		if err := json.Unmarshal([]byte(events), &sub.Events); err != nil {
			return nil, fmt.Errorf("webhooks: subscription events: %w", err)
		}
		if err := json.Unmarshal([]byte(filters), &sub.Filters); err != nil {
			return nil, fmt.Errorf("webhooks: subscription filters: %w", err)
		}
		sub.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, sub)
	}
	return out, rows.Err()
}
