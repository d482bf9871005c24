package webhooks

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkDisableWithPendingDeliveries measures the projector disabling a subscription that has
// 100,000 pending deliveries (a receiver down for long, then disabled): the transaction that gives
// them all up, in chunks of giveUpChunkSize, on each store, with current statistics.
// FUNNEL_BENCH_DELIVERIES lowers the number for a quick run.
func BenchmarkDisableWithPendingDeliveries(b *testing.B) {
	pending := 100_000
	if s := os.Getenv("FUNNEL_BENCH_DELIVERIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			b.Fatalf("FUNNEL_BENCH_DELIVERIES=%q: want a number of at least 100", s)
		}
		pending = n
	}
	for _, d := range sqldbtest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			db := sqldbtest.Open(b, d)
			ctx := context.Background()
			obs := &countingObserver{}
			p := NewProjector(d, 10, testSealer(b), obs, zap.NewNop(), nil)
			exec := func(q string, args ...any) {
				b.Helper()
				if _, err := db.Write.ExecContext(ctx, q, args...); err != nil {
					b.Fatalf("%s: %v", q, err)
				}
			}
			exec(`INSERT INTO webhook_subscriptions (id, account_id, kind, url, events, filters, secret, previous_secret, previous_valid_until,
				status, status_reason, created_at, updated_at, position, secrets_sealed)
				VALUES ('wh_1', 'acc_1', 'custom', 'https://example.com/', '[]', '{}', '', '', 0, 'active', '', 0, 0, 1, 1)`)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				// Afresh each round: the subscription active, its deliveries pending, and another
				// subscription's beside them, then statistics as autovacuum would keep them.
				exec(`DELETE FROM webhook_deliveries`)
				exec(`UPDATE webhook_subscriptions SET status = 'active'`)
				exec(`WITH RECURSIVE s(p) AS (SELECT CAST(1 AS BIGINT) UNION ALL SELECT p + 1 FROM s WHERE p < CAST($1 AS BIGINT))
					INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body,
						status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at)
					SELECT 'dlv_' || CAST((p * 7919) % 1000003 AS TEXT) || '_' || CAST(p AS TEXT), 'acc_1', CASE WHEN p % 10 = 0 THEN 'wh_2' ELSE 'wh_1' END,
						'evt_' || p, 'form.submitted', p, '', '{}', 'pending', 1, 10, 5000, 0, 500, '', 1000, 1000
					FROM s`, pending*10/9)
				if d == sqldb.Postgres {
					exec(`VACUUM ANALYZE webhook_deliveries`)
				} else {
					exec(`ANALYZE`)
				}
				typ, version, data, err := domain.EncodeEvent(domain.WebhookSubscriptionDisabled{SubscriptionID: "wh_1", Reason: "failing"})
				if err != nil {
					b.Fatal(err)
				}
				disabled := domain.Recorded{ID: uuid.NewString(), StreamID: "wh_1", Position: int64(i + 2), Type: typ, SchemaVersion: version,
					OccurredAt: time.Now(), Data: data, Metadata: domain.Metadata{AccountID: "acc_1"}}
				obs.givenUp = 0
				b.StartTimer()
				tx, release, err := db.BeginDerivedTx(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Apply(ctx, tx, []domain.Recorded{disabled}); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				release()
				p.Committed()
				b.StopTimer()
				if obs.givenUp < pending-1 || obs.givenUp > pending+1 {
					b.Fatalf("given up %d deliveries, want %d", obs.givenUp, pending)
				}
				b.StartTimer()
			}
		})
	}
}
