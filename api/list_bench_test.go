package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkListContacts measures GET /api/v1/contacts?limit=50 end to end (HTTP on loopback, the
// API key checked as on every request) over an account of 100,000 contacts, each with two tags
// and a custom field, with 8 concurrent clients, in both storage modes. It reports lists/s and the
// p50 and p99 latencies. FUNNEL_BENCH_CONTACTS lowers the number of contacts for a quick run.
func BenchmarkListContacts(b *testing.B) {
	contacts := 100_000
	if s := os.Getenv("FUNNEL_BENCH_CONTACTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("FUNNEL_BENCH_CONTACTS=%q: want a positive number", s)
		}
		contacts = n
	}
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			svc := servicetest.Start(b, dialect, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			seedContacts(b, svc, acc, contacts)
			// A plain client: the benchmark measures the service, not a decode or contract check of
			// each answer.
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			url := svc.API.URL() + "/api/v1/contacts?limit=50"
			list := func() (int, error) {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				if err != nil {
					return 0, err
				}
				req.Host = service.Defaults().APIHost // the API answers on its own host name only
				req.Header.Set("Authorization", "Bearer "+acc.Key)
				res, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				defer res.Body.Close()
				_, err = io.Copy(io.Discard, res.Body)
				return res.StatusCode, err
			}
			if status, err := list(); err != nil || status != http.StatusOK {
				b.Fatalf("list: %d %v", status, err)
			}
			latencies := eightClients(b, func() error {
				if status, err := list(); err != nil || status != http.StatusOK {
					return fmt.Errorf("list: %d %v", status, err)
				}
				return nil
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
			b.ReportMetric(float64(percentile(latencies, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// seedContacts appends n contacts of acc, each created with a custom field and given two tags,
// straight to the log, 500 contacts an append, and waits until the read models show them.
func seedContacts(b *testing.B, svc *servicetest.Service, acc servicetest.Account, n int) {
	b.Helper()
	lead, news := svc.NewTag(b, acc.ID, "Lead"), svc.NewTag(b, acc.ID, "Newsletter")
	field := svc.NewCustomField(b, acc.ID, "Plan")
	ctx := context.Background()
	meta := domain.Metadata{AccountID: acc.ID, Actor: "operator"}
	var last int64
	for i := 0; i < n; i += 500 {
		appends := make([]domain.StreamAppend, 0, 500)
		for j := i; j < min(n, i+500); j++ {
			email := fmt.Sprintf("list-%d@example.com", j)
			id := domain.ContactIDFor(acc.ID, email)
			appends = append(appends, domain.StreamAppend{StreamID: id, Events: []domain.Event{
				domain.ContactCreated{ContactID: id, AccountID: acc.ID, Email: email, FirstName: "List", LastName: "Bench",
					CustomFields: map[string]string{field: "gold"}},
				domain.TagApplied{ContactID: id, TagID: lead, TagName: "Lead"},
				domain.TagApplied{ContactID: id, TagID: news, TagName: "Newsletter"},
			}})
		}
		pos, err := svc.App.Store().Append(ctx, meta, appends...)
		if err != nil {
			b.Fatal(err)
		}
		last = pos
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := svc.App.ReadModels().WaitReadModels(wait, last); err != nil {
		b.Fatal(err)
	}
}
