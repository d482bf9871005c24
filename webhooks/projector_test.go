package webhooks

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Deliveries given up because their subscription was deleted or disabled count in the
// given_up metric: once each, and only once the projector's transaction committed.
func TestEndingASubscriptionCountsTheDeliveriesItGivesUp(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		obs := &countingObserver{}
		p := NewProjector(d, 10, testSealer(t), obs, zap.NewNop(), nil)
		p.giveUpChunk = 1 // two pending deliveries a subscription: given up in more than one chunk
		ctx := context.Background()
		pos := int64(0)
		event := func(e domain.Event) domain.Recorded {
			t.Helper()
			typ, version, data, err := domain.EncodeEvent(e)
			if err != nil {
				t.Fatal(err)
			}
			pos++
			return domain.Recorded{ID: uuid.NewString(), StreamID: "s", Position: pos, Type: typ, SchemaVersion: version,
				OccurredAt: time.Now(), Data: data, Metadata: domain.Metadata{AccountID: "acc_1"}}
		}
		// apply applies a batch in a transaction that commits, or rolls back as a failed one does.
		apply := func(commit bool, batch ...domain.Recorded) {
			t.Helper()
			tx, release, err := db.BeginDerivedTx(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			if err := p.Apply(ctx, tx, batch); err != nil {
				t.Fatal(err)
			}
			if !commit {
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			p.Committed()
		}
		subscribed := func(id string) domain.Recorded {
			return event(domain.WebhookSubscribed{SubscriptionID: id, AccountID: "acc_1", Kind: domain.WebhookKindCustom,
				URL: "https://example.com/" + id, Events: []string{"form.submitted"}, Secret: "secret-0123456789"})
		}
		submitted := func() domain.Recorded {
			return event(domain.FormSubmitted{SubmissionID: domain.NewID("fsub"), FormID: "form_1", FormName: "Form", AccountID: "acc_1", SubmittedAt: time.Now()})
		}

		apply(true, subscribed("wh_1"), subscribed("wh_2"), submitted(), submitted())
		if obs.givenUp != 0 {
			t.Fatalf("given up before any subscription ended: %d", obs.givenUp)
		}

		deleted := event(domain.WebhookSubscriptionDeleted{SubscriptionID: "wh_1"})
		apply(false, deleted)
		if obs.givenUp != 0 {
			t.Fatalf("a transaction that rolled back counted %d given-up deliveries", obs.givenUp)
		}
		apply(true, deleted)
		if obs.givenUp != 2 {
			t.Fatalf("deleting a subscription with 2 pending deliveries counted %d", obs.givenUp)
		}

		disabled := event(domain.WebhookSubscriptionDisabled{SubscriptionID: "wh_2", Reason: "the target answered 410 Gone"})
		apply(true, disabled)
		apply(true, disabled) // redelivered
		if obs.givenUp != 4 {
			t.Fatalf("after disabling the other subscription (twice) given up = %d, want 4", obs.givenUp)
		}
		var failed int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'failed' AND last_error LIKE 'given up: %'`).Scan(&failed); err != nil || failed != 4 {
			t.Fatalf("given-up deliveries in the outbox = %d, %v", failed, err)
		}
	})
}
