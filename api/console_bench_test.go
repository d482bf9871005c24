package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkConsoleReads measures, end to end over loopback with 8 concurrent clients, the two
// operator reads that the console does on a big account: the search of one contact by email in
// an account of 100,000 contacts (GET /admin/v1/accounts/{a}/contacts?email=), and the first page
// of the timeline of a contact with 6,000 events (GET …/history?contactId=, oldest and newest
// first), in both storage modes. It reports p50 and p99 latencies. FUNNEL_BENCH_CONTACTS lowers
// the number of contacts for a quick run.
func BenchmarkConsoleReads(b *testing.B) {
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
			busy := domain.ContactIDFor(acc.ID, "list-0@example.com")
			tag := svc.NewTag(b, acc.ID, "Busy")
			events := make([]domain.Event, 0, 6000)
			for len(events) < 6000 {
				events = append(events, domain.TagApplied{ContactID: busy, TagID: tag, TagName: "Busy"}, domain.TagRemoved{ContactID: busy, TagID: tag, TagName: "Busy"})
			}
			pos, err := svc.App.Store().Append(context.Background(), domain.Metadata{AccountID: acc.ID, Actor: "operator"},
				domain.StreamAppend{StreamID: busy, ExpectedVersion: domain.AnyVersion, Events: events})
			if err != nil {
				b.Fatal(err)
			}
			if err := svc.App.ReadModels().WaitReadModels(context.Background(), pos); err != nil {
				b.Fatal(err)
			}

			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			base := svc.Operator.URL() + "/admin/v1/accounts/" + acc.ID
			for _, read := range []struct{ name, path string }{
				{"search-by-email", fmt.Sprintf("/contacts?email=LIST-%d@example.com", contacts/2)},
				{"timeline-6000-oldest", "/history?contactId=" + busy},
				{"timeline-6000-newest", "/history?order=newest&contactId=" + busy},
			} {
				b.Run(read.name, func(b *testing.B) {
					get := func() error {
						req, err := http.NewRequest(http.MethodGet, base+read.path, nil)
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
							return fmt.Errorf("%s: %d", read.path, res.StatusCode)
						}
						return nil
					}
					if err := get(); err != nil {
						b.Fatal(err)
					}
					latencies := eightClients(b, get)
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
					b.ReportMetric(float64(percentile(latencies, 0.5).Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}
