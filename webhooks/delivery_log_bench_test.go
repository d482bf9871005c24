package webhooks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkDeliveryLogPage measures the page of a subscription's delivery log that the console
// opens (GET /admin/v1/accounts/{a}/webhook-deliveries?webhookId=&limit=50), end to end over
// loopback with 8 concurrent clients, once the subscription has 100,000 deliveries, in both
// storage modes; it reports the p50 and p99 latencies. FUNNEL_BENCH_DELIVERIES lowers the number
// of deliveries for a quick run.
func BenchmarkDeliveryLogPage(b *testing.B) {
	deliveries := 100_000
	if s := os.Getenv("FUNNEL_BENCH_DELIVERIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			b.Fatalf("FUNNEL_BENCH_DELIVERIES=%q: want a number of at least 100", s)
		}
		deliveries = n
	}
	for _, d := range sqldbtest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			svc := servicetest.Start(b, d, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			form := newFormB(b, svc, acc.ID)
			rcv := newSink(b)
			webhook := svc.Operator.Post(b, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}}).
				Expect(b, http.StatusCreated).Object(b, "webhook")["id"].(string)
			meta := domain.Metadata{AccountID: acc.ID, Actor: "bench"}
			for i := 0; i < deliveries; i += 100 {
				appends := make([]domain.StreamAppend, 100)
				for j := range appends {
					appends[j] = submission(acc.ID, form, i+j)
				}
				if _, err := svc.App.Store().Append(context.Background(), meta, appends...); err != nil {
					b.Fatal(err)
				}
			}
			rcv.waitFor(b, int64(deliveries), 10*time.Minute)

			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			url := svc.Operator.URL() + "/admin/v1/accounts/" + acc.ID + "/webhook-deliveries?limit=50&webhookId=" + webhook
			get := func() error {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				if err != nil {
					return err
				}
				req.Header.Set("Authorization", "Bearer "+servicetest.AdminToken)
				res, err := client.Do(req)
				if err != nil {
					return err
				}
				defer res.Body.Close()
				if _, err := io.Copy(io.Discard, res.Body); err != nil {
					return err
				}
				if res.StatusCode != http.StatusOK {
					return fmt.Errorf("delivery log: %d", res.StatusCode)
				}
				return nil
			}
			if err := get(); err != nil {
				b.Fatal(err)
			}
			var mu sync.Mutex
			var latencies []time.Duration
			b.SetParallelism(4) // 4 × GOMAXPROCS (2) = 8 clients
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					start := time.Now()
					if err := get(); err != nil {
						b.Error(err)
						return
					}
					took := time.Since(start)
					mu.Lock()
					latencies = append(latencies, took)
					mu.Unlock()
				}
			})
			slices.Sort(latencies)
			at := func(p float64) float64 {
				return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			b.ReportMetric(at(0.5), "p50-ms")
			b.ReportMetric(at(0.99), "p99-ms")
		})
	}
}
