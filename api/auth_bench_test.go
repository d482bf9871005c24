package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkAuthenticatedGet measures GET /api/v1/contacts/{id} end to end (HTTP on loopback, the
// API key checked against the log as on every request) with 8 concurrent clients, in both storage
// modes: what authentication costs shows against a cheap read. It reports reads/s and the p50
// and p99 latencies.
func BenchmarkAuthenticatedGet(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			svc := servicetest.Start(b, dialect, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			path := "/api/v1/contacts/" + svc.API.Post(b, "/api/v1/contacts", acc.Key, map[string]any{"email": "bench@example.com"}).Object(b, "contact")["id"].(string)
			latencies := eightClients(b, func() error {
				if res := svc.API.Get(b, path, acc.Key); res.Status != http.StatusOK {
					return fmt.Errorf("%d %s, want %d", res.Status, res.Raw, http.StatusOK)
				}
				return nil
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
			b.ReportMetric(float64(percentile(latencies, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}
