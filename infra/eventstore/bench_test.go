package eventstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkAppend measures append throughput with many concurrent writers, each appending one
// event at a time to its own stream (the shape of API traffic), in both storage modes.
func BenchmarkAppend(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		for _, writers := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/writers=%d", dialect, writers), func(b *testing.B) {
				benchmarkAppend(b, dialect, writers)
			})
		}
	}
}

func benchmarkAppend(b *testing.B, dialect sqldb.Dialect, writers int) {
	s, _ := newStoreB(b, dialect)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism((writers + 1) / 2) // RunParallel starts parallelism × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		stream := fmt.Sprintf("ct_%d", next.Add(1))
		var version int64
		for pb.Next() {
			if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: stream, ExpectedVersion: version, Events: tagged(stream, 1)}); err != nil {
				b.Fatal(err)
			}
			version++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}
