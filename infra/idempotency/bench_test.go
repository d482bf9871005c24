package idempotency_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/funnelhq/funnel/api/httpapi/idempotent"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkClaimAndComplete measures the store's part of a request with a fresh key answered at
// once: the claim and the kept answer, at 8 concurrent requests (a late answer also keeps the
// outcome between them: httpapi's keepOutcomesAfter).
func BenchmarkClaimAndComplete(b *testing.B) {
	for _, d := range sqldbtest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			f := newFixtureB(b, d)
			var n atomic.Int64
			answer := idempotent.Response{Status: 200, ContentType: "application/json; charset=utf-8", Body: make([]byte, 600)}
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					c, err := f.keys.Claim(ctx, request(fmt.Sprintf("k-%d", n.Add(1)), "body"))
					if err != nil || c.Decision != idempotent.Perform {
						b.Errorf("claim: %v %d", err, c.Decision)
						return
					}
					if err := f.keys.Complete(ctx, c, answer); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
		})
	}
}
