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
	rows, err := s.db.Read.QueryContext(ctx, readContactHistoryNewestFirst, contactID, accountID, beforeOrHead(before), limit)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read contact history newest first: %w", err)
	}
	return s.scanOpened(ctx, rows)
}

// ReadSubscriptionHistoryNewestFirst is ReadSubscriptionHistory read backwards, newest first.
func (s *Store) ReadSubscriptionHistoryNewestFirst(ctx context.Context, accountID, subscriptionID string, before int64, limit int) ([]domain.Recorded, error) {
	rows, err := s.db.Read.QueryContext(ctx, selectEvents+` WHERE subscription_id = $1 AND account_id = $2 AND position < $3 ORDER BY position DESC LIMIT $4`,
		subscriptionID, accountID, beforeOrHead(before), limit)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read subscription history newest first: %w", err)
	}
	return s.scanOpened(ctx, rows)
}

var readContactHistoryNewestFirst = contactHistoryQuery(true)

// contactHistoryQuery reads a page of a contact's history, oldest or newest first: at most a page
// of the events that name the contact (through the log's index by contact) and at most a page of
// its own stream's (through the stream's index, in version order, which is position order within
// a stream), merged. A single condition "contact_id = $1 OR stream_id = $1" lets SQLite, which
// keeps no statistics, walk every event of the account instead and sort them: seconds for a page
// on a big account. The account is checked on the merged page, outside the two reads, so that
// neither is drawn to the index by account (ids are unique across accounts: a stream, or the
// events naming a contact, belong to one account, so this narrows nothing else).
func contactHistoryQuery(newest bool) string {
	cmp, dir := ">", "ASC"
	if newest {
		cmp, dir = "<", "DESC"
	}
	const columns = `position, event_id, stream_id, version, type, schema_version, occurred_at, data, metadata`
	return fmt.Sprintf(`SELECT %[1]s FROM (
		SELECT * FROM (SELECT %[1]s, account_id FROM events WHERE contact_id = $1 AND position %[2]s $3 ORDER BY position %[3]s LIMIT $4) AS named
		UNION SELECT * FROM (SELECT %[1]s, account_id FROM events WHERE stream_id = $1 AND position %[2]s $3 ORDER BY version %[3]s LIMIT $4) AS own
	) AS page WHERE account_id = $2 ORDER BY position %[3]s LIMIT $4`, columns, cmp, dir)
}

// beforeOrHead is the position a backward read starts below: 0 stands for past the head.
func beforeOrHead(before int64) int64 {
	if before <= 0 {
		return math.MaxInt64
	}
	return before
}

// readContactSubscriptions finds the subscriptions of a contact's purchases through the events of
// other streams that name it (events_by_contact: CheckoutPurchased, rebills, refunds and
// cancellations carry the subscription's id). It reads ids only, nothing sealed. The account and
// the subscription id are tested in a form no index can use, so that only the contact's few
// entries are read: "subscription_id IS NOT NULL" is the predicate of events_by_subscription,
// which both planners then walked (every subscription event of the log), and PostgreSQL without
// statistics ANDed the contact's entries with every event of the account
// (events_by_account_type; plans_test.go).
const readContactSubscriptions = `SELECT DISTINCT subscription_id FROM events WHERE contact_id = $1 AND COALESCE(account_id, '') = $2 AND COALESCE(subscription_id, '') <> ''`

// SubscriptionsOfContact returns the ids of the billing subscriptions a contact's purchases
// started, from the log (commands.ContactSubscriptions).
func (s *Store) SubscriptionsOfContact(ctx context.Context, accountID, contactID string) ([]string, error) {
	rows, err := s.db.Read.QueryContext(ctx, readContactSubscriptions, contactID, accountID)
	if err != nil {
		return nil, fmt.Errorf("eventstore: subscriptions of %s: %w", contactID, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("eventstore: subscriptions of %s: %w", contactID, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventstore: subscriptions of %s: %w", contactID, err)
	}
	return ids, nil
}
