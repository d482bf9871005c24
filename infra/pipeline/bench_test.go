package pipeline

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkProjectionLag appends contact writes (a contact created with two tags, as an upsert
// records) at 1,000 per second and measures, for each, the time from its append returning to the
// contacts read model having applied it. It reports the p50 and p99 lag.
func BenchmarkProjectionLag(b *testing.B) {
	for _, d := range sqldbtest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			db := sqldbtest.Open(b, d)
			s := eventstore.New(db)
			defer s.Close()
			p := newContactsPipeline(db, s)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			defer func() { cancel(); <-done }()
			<-p.Ready()

			n := max(b.N, 3000) // at least three seconds at the rate
			lags := make([]time.Duration, n)
			ticker := time.NewTicker(time.Millisecond)
			defer ticker.Stop()
			errs := make(chan error, n)
			b.ResetTimer()
			for i := 0; i < n; i++ {
				<-ticker.C
				go func(i int) {
					id := fmt.Sprintf("ct_lag%06d", i)
					pos, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: id, Events: []domain.Event{
						domain.ContactCreated{ContactID: id, AccountID: "acc_1", Email: id + "@example.com", CustomFields: map[string]string{}},
						domain.TagApplied{ContactID: id, TagID: "tag_a"}, domain.TagApplied{ContactID: id, TagID: "tag_b"},
					}})
					if err != nil {
						errs <- err
						return
					}
					appended := time.Now()
					err = p.Tracker().WaitReadModels(ctx, pos)
					lags[i] = time.Since(appended)
					errs <- err
				}(i)
			}
			for i := 0; i < n; i++ {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			slices.Sort(lags)
			b.ReportMetric(float64(lags[n/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lags[n*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
