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

// catchUp recovers what the receiver missed while it was down, through funnel's event feed
// (GET /api/v1/events): every outbound event of the account of the last 30 days, oldest first,
// as the envelopes webhooks deliver. It applies each through the same rules as a delivery, so an
// envelope that also arrives by webhook (or arrived before) is applied once (its id). It keeps
// the feed's cursor in the store, so the next catch-up reads only what came after. The key needs
// events:read besides the receiver's other scopes.
type catchUp struct {
	api   *client.ClientWithResponses
	store *store
	rules *rules
	log   *slog.Logger
}

// caughtUpTypes are the event types the rules handle.
var caughtUpTypes = strings.Join([]string{"checkout.purchased", "checkout.rebilled", "checkout.refunded",
	"checkout.subscription_cancel_scheduled", "checkout.subscription_cancelled", "form.submitted"}, ",")

// run reads the feed from the kept cursor to its end, applying each envelope, and keeps the cursor
// after each page. It returns how many envelopes it applied; an envelope that fails stops it
// there (the next run starts again at that page).
func (c *catchUp) run(ctx context.Context) (int, error) {
	cursor, err := c.store.feedCursor(ctx)
	if err != nil {
		return 0, err
	}
	applied := 0
	limit := 200
	for {
		params := &client.ListEventsParams{Types: &caughtUpTypes, Limit: &limit}
		if cursor != "" {
			params.After = &cursor
		}
		res, err := c.api.ListEventsWithResponse(ctx, params)
		if err != nil {
			return applied, fmt.Errorf("catch up: %w", err)
		}
		if res.StatusCode() != 200 {
			return applied, failed("listEvents", res.StatusCode(), res.Body)
		}
		// The envelopes as they came, raw: the rules read a delivery's body.
		var page struct {
			Events     []json.RawMessage `json:"events"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res.Body, &page); err != nil {
			return applied, fmt.Errorf("catch up: the feed's answer: %w", err)
		}
		for _, env := range page.Events {
			ok, err := c.rules.apply(ctx, env)
			if errors.Is(err, errMalformed) {
				c.log.Warn("catch up: skipped an envelope the rules cannot read", "envelope", string(env))
				continue
			}
			if err != nil {
				return applied, fmt.Errorf("catch up: %w", err)
			}
			if ok {
				applied++
			}
		}
		if err := c.store.keepFeedCursor(ctx, page.NextCursor); err != nil {
			return applied, err
		}
		if len(page.Events) == 0 || page.NextCursor == cursor {
			return applied, nil
		}
		cursor = page.NextCursor
	}
}

// every catches up now, then every interval until ctx ends; a failed catch-up is logged and
// tried again at the next one.
func (c *catchUp) every(ctx context.Context, interval time.Duration) {
	for {
		n, err := c.run(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.Error("catch up through the event feed", "error", err)
		} else if n > 0 {
			c.log.Info("caught up through the event feed", "applied", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// feedCursor is the event feed's cursor the last catch-up kept ("" before the first).
func (s *store) feedCursor(ctx context.Context) (string, error) {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS feed_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), cursor TEXT NOT NULL)`); err != nil {
		return "", fmt.Errorf("store: feed cursor: %w", err)
	}
	var cursor string
	err := s.db.QueryRowContext(ctx, `SELECT cursor FROM feed_cursor WHERE id = 1`).Scan(&cursor)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: feed cursor: %w", err)
	}
	return cursor, nil
}

// keepFeedCursor keeps the cursor the next catch-up starts from.
func (s *store) keepFeedCursor(ctx context.Context, cursor string) error {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO feed_cursor (id, cursor) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET cursor = excluded.cursor`, cursor); err != nil {
		return fmt.Errorf("store: keep the feed cursor: %w", err)
	}
	return nil
}
