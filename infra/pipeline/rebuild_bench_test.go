package pipeline

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/eventstore/eventstoretest"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// BenchmarkRebuild rebuilds the contacts and the leads read models from a synthetic log of
// FUNNEL_BENCH_REBUILD_EVENTS events (default 40,000: a quick run; the target of 100k events/s
// is for logs of millions) on both stores, and reports the events replayed per second and the
// peak heap in use during the rebuild, which must not grow with the log.
func BenchmarkRebuild(b *testing.B) {
	events := 40_000
	if v := os.Getenv("FUNNEL_BENCH_REBUILD_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("FUNNEL_BENCH_REBUILD_EVENTS=%q: want a positive number", v)
		}
		events = n
	}
	for _, d := range sqldbtest.Dialects {
		// Personal values as the service stores them (sealed under each person's key: a
		// rebuild opens every one) and plain: what opening costs a rebuild.
		for _, personal := range []string{"sealed", "plain"} {
			b.Run(string(d)+"/personal="+personal, func(b *testing.B) {
				ctx := context.Background()
				db := sqldbtest.Open(b, d)
				s := eventstore.New(db)
				defer s.Close()
				if personal == "sealed" {
					_, server := sealingtest.NewKey(b)
					s.SealPersonalData(server)
				}
				head, err := eventstoretest.Generate(ctx, s, "acc_1", 0, events/eventstoretest.EventsPerContact)
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range []Rebuildable{projections.NewContacts(db.Read), projections.NewLeads(db.Read)} {
					b.Run(p.Name(), func(b *testing.B) {
						peak := watchHeap()
						b.ResetTimer()
						for range b.N {
							if _, err := Rebuild(ctx, db, s, p, nil); err != nil {
								b.Fatal(err)
							}
						}
						b.StopTimer()
						b.ReportMetric(float64(head)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
						b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
					})
				}
			})
		}
	}
}

// watchHeap samples the heap in use until the returned function is called, which returns the
// highest sample.
func watchHeap() func() uint64 {
	var (
		mu   sync.Mutex
		peak uint64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	runtime.GC() // what the setup left behind is not the rebuild's
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			mu.Lock()
			peak = max(peak, m.HeapInuse)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
