package eventstore

import (
	"context"
	"fmt"
	"math"

	"github.com/funnelhq/funnel/domain"
)

// ReadContactHistoryNewestFirst is ReadContactHistory read backwards: up to limit events of the
// contact before a position (0: from the log's head), newest first, for a timeline that opens on
// what happened last. The index of the log by contact serves both directions.
func (s *Store) ReadContactHistoryNewestFirst(ctx context.Context, accountID, contactID string, before int64, limit int) ([]domain.Recorded, error) {
	rows, err := s.db.Read.QueryContext(ctx, selectEvents+` WHERE (contact_id = $1 OR stream_id = $1) AND account_id = $2 AND position < $3 ORDER BY position DESC LIMIT $4`,
		contactID, accountID, beforeOrHead(before), limit)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read contact history newest first: %w", err)
	}
	return scanEvents(rows)
}

// ReadSubscriptionHistoryNewestFirst is ReadSubscriptionHistory read backwards, newest first.
func (s *Store) ReadSubscriptionHistoryNewestFirst(ctx context.Context, accountID, subscriptionID string, before int64, limit int) ([]domain.Recorded, error) {
	rows, err := s.db.Read.QueryContext(ctx, selectEvents+` WHERE subscription_id = $1 AND account_id = $2 AND position < $3 ORDER BY position DESC LIMIT $4`,
		subscriptionID, accountID, beforeOrHead(before), limit)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read subscription history newest first: %w", err)
	}
	return scanEvents(rows)
}

// beforeOrHead is the position a backward read starts below: 0 stands for past the head.
func beforeOrHead(before int64) int64 {
	if before <= 0 {
		return math.MaxInt64
	}
	return before
}
