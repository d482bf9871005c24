package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
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
	position     int64 // the log position of its creation: the list's order
}

const selectSubscriptions = `SELECT id, account_id, kind, url, events, filters, status, status_reason, created_at, position FROM webhook_subscriptions`

// Get returns one subscription of an account: a domain NotFound error when there is none, a
// domain Forbidden one when it belongs to another account (decisions.md "General").
func (s *Subscriptions) Get(ctx context.Context, accountID, id string) (Subscription, error) {
	subs, err := s.query(ctx, selectSubscriptions+` WHERE id = $1`, id)
	switch {
	case err != nil:
		return Subscription{}, err
	case len(subs) == 0:
		return Subscription{}, domain.NotFound("subscription not found")
	case subs[0].AccountID != accountID:
		return Subscription{}, domain.Forbidden("subscription belongs to another account")
	}
	return subs[0], nil
}

// List returns a page of an account's subscriptions that are not deleted, oldest first, and the
// cursor of the next page; kind "" lists every kind.
func (s *Subscriptions) List(ctx context.Context, accountID, kind string, page paging.Page) ([]Subscription, string, error) {
	var after int64
	if page.Cursor != "" {
		if err := paging.DecodeCursor(page.Cursor, &after); err != nil {
			return nil, "", err
		}
	}
	subs, err := s.query(ctx, fmt.Sprintf(selectSubscriptions+` WHERE account_id = $1 AND status <> 'deleted' AND ($2 = '' OR kind = $2) AND position > $3
		ORDER BY position LIMIT %d`, sqldb.TextLimit(page.Limit+1)), accountID, kind, after)
	if err != nil {
		return nil, "", err
	}
	subs, next := paging.Cut(subs, page.Limit, func(sub Subscription) any { return sub.position })
	return subs, next, nil
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
		if err := rows.Scan(&sub.ID, &sub.AccountID, &sub.Kind, &sub.URL, &events, &filters, &sub.Status, &sub.StatusReason, &created, &sub.position); err != nil {
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
