package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/funnelhq/funnel/api/httpapi/limits"
	"github.com/funnelhq/funnel/infra/ratelimit/redistest"
)

// BenchmarkDecide measures one request's decisions as the integration API takes them for a
// contact write (the address's window with a check of its failed authentications, then the
// account's writes and contact writes), with 8 clients, in each store: the limiter's own share
// of BenchmarkUpsertContact (api/bench_test.go). The limits are out of reach: every decision
// admits.
func BenchmarkDecide(b *testing.B) {
	rule := func(name string, window time.Duration) limits.Rule {
		return limits.Rule{Name: name, Max: 1 << 30, Window: window}
	}
	address := []limits.Count{{Rule: rule("ip", time.Minute), Subject: "192.0.2.1"}, {Rule: rule("auth-failures", 15*time.Minute), Subject: "192.0.2.1", CheckOnly: true}}
	account := []limits.Count{{Rule: rule("writes", time.Minute), Subject: "acc_1"}, {Rule: rule("contact-writes", time.Minute), Subject: "acc_1"}}
	for _, store := range []string{"memory", "redis"} {
		b.Run(store, func(b *testing.B) {
			var l limits.Limiter = NewMemory(nil)
			if store == "redis" {
				l = NewRedis(redistest.Client(b), redistest.Prefix(b))
			}
			b.SetParallelism(4) // 4 × GOMAXPROCS (2) = 8 clients
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					for _, counts := range [][]limits.Count{address, account} {
						if d, err := l.Decide(ctx, counts); err != nil || !d.Allowed {
							b.Errorf("decide: %v, %+v", err, d)
							return
						}
					}
				}
			})
		})
	}
}
