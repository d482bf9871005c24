package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/app"
	"github.com/funnelhq/funnel/app/apptest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkUpsertContact measures POST /api/v1/contacts end to end (HTTP on loopback, a new email
// and two tagNames, read-your-writes included) with 8 concurrent clients, in both storage modes.
// It reports upserts/s and the p99 latency.
func BenchmarkUpsertContact(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			svc, acc := upsertService(b, dialect)
			upsertContacts(b, svc, acc, "bench", nil)
		})
	}
}

// BenchmarkIdempotencyKeyCost measures what an Idempotency-Key adds to POST /api/v1/contacts at 8
// clients: the same upserts without and with a fresh key each, side by side on one service per
// storage mode.
func BenchmarkIdempotencyKeyCost(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			svc, acc := upsertService(b, dialect)
			b.Run("without-key", func(b *testing.B) { upsertContacts(b, svc, acc, "plain", nil) })
			b.Run("with-key", func(b *testing.B) {
				upsertContacts(b, svc, acc, "keyed", func(i int64) map[string]string {
					return map[string]string{"Idempotency-Key": fmt.Sprintf("bench-%d", i)}
				})
			})
		})
	}
}

// upsertService starts a service without rate limits, with an account and the tags the upserts name.
func upsertService(b *testing.B, dialect sqldb.Dialect) (*apptest.Service, apptest.Account) {
	svc := apptest.Start(b, dialect, func(c *app.Config) { c.RateLimits = false })
	acc := svc.NewAccount(b)
	svc.NewTag(b, acc.ID, "Lead")
	svc.NewTag(b, acc.ID, "Newsletter")
	return svc, acc
}

// upsertContacts upserts new contacts from 8 clients (headers, when given, adds headers to the
// i-th) and reports upserts/s and the p99 latency.
func upsertContacts(b *testing.B, svc *apptest.Service, acc apptest.Account, prefix string, headers func(i int64) map[string]string) {
	var n atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	b.SetParallelism(4) // 4 × GOMAXPROCS (2) = 8 clients
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			i := n.Add(1)
			req := apptest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key,
				Body: map[string]any{"email": fmt.Sprintf("%s-%d@example.com", prefix, i), "firstName": "Bench", "tagNames": []string{"Lead", "Newsletter"}}}
			if headers != nil {
				req.Headers = headers(i)
			}
			start := time.Now()
			res := svc.API.Do(b, req)
			mine = append(mine, time.Since(start))
			if res.Status != http.StatusOK {
				b.Errorf("upsert: %d %s", res.Status, res.Raw)
				return
			}
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "upserts/s")
	b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-ms")
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}
