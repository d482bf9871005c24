package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/pressly/goose/v3"
)

// subscriptionHistoryMigration is migration 8: it indexes the log by subscription (billing or
// webhook), as
// events.contact_id indexes it by contact, and fills the new column for the events recorded before
// it existed. The column is derived from each event's own data (domain.SubscriptionEvent names it
// at append); filling it changes no recorded fact. It is the one migration written in Go, because
// reading a member of an event's JSON data is spelled differently by each database.
func subscriptionHistoryMigration(dialect Dialect) *goose.Migration {
	up := []string{
		`ALTER TABLE events ADD COLUMN subscription_id TEXT`,
		`CREATE INDEX events_by_subscription ON events (subscription_id, position) WHERE subscription_id IS NOT NULL`,
		// A subscription's own stream, billing or webhook.
		`UPDATE events SET subscription_id = stream_id
		  WHERE type IN ('SubscriptionStarted', 'SubscriptionRenewed', 'SubscriptionCompleted', 'SubscriptionCancelScheduled', 'SubscriptionCancelled',
		                 'WebhookSubscribed', 'WebhookSubscriptionDeleted', 'WebhookSubscriptionDisabled', 'WebhookSecretRotated')`,
		// Payments and refunds name their subscription in their sale ("" for one-time purchases).
		`UPDATE events SET subscription_id = NULLIF(` + jsonText(dialect, "transaction", "subscriptionId") + `, '')
		  WHERE type IN ('CheckoutPurchased', 'CheckoutRebilled', 'CheckoutRefunded')`,
		// An activation names the subscription its purchase opened when it is issued; its later
		// events did not, until this migration: they follow their stream's first event.
		`UPDATE events SET subscription_id = NULLIF(` + jsonText(dialect, "subscriptionId") + `, '')
		  WHERE type = 'ActivationIssued'`,
		`UPDATE events SET subscription_id = (SELECT issued.subscription_id FROM events issued
		    WHERE issued.stream_id = events.stream_id AND issued.type = 'ActivationIssued')
		  WHERE type IN ('ActivationCompleted', 'ActivationExpired')`,
	}
	down := []string{
		`DROP INDEX events_by_subscription`,
		`ALTER TABLE events DROP COLUMN subscription_id`,
	}
	if dialect == Postgres {
		// The filling updates read much of the log: let the planner scan it, which funnel's
		// sessions otherwise refuse where an index applies (db.go, openPostgres).
		up = append([]string{`SET LOCAL enable_seqscan = on`}, up...)
	}
	m := goose.NewGoMigration(8, &goose.GoFunc{RunTx: run(up)}, &goose.GoFunc{RunTx: run(down)})
	m.Source = "00008_events_by_subscription.go" // how `migrate` names it
	return m
}

// jsonText reads a text member of an event's data, by its path.
func jsonText(dialect Dialect, path ...string) string {
	if dialect == Postgres {
		return `data::json #>> '{` + strings.Join(path, ",") + `}'`
	}
	return `json_extract(data, '$.` + strings.Join(path, ".") + `')`
}

// run executes statements in order, in the migration's transaction.
func run(statements []string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		for _, s := range statements {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("sqldb: %s: %w", strings.Fields(s)[0], err)
			}
		}
		return nil
	}
}
