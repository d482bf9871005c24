package api_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// diskWrites counts what this process sends to storage (write_bytes of /proc/self/io: the WAL's
// frames, the checkpoints' pages) while a benchmark of a SQLite service runs, and reports it per
// operation: a figure that, unlike a rate on a shared machine, moves by about 1% from run to run, so
// that a change to what a write stores can be judged in one run (docs/performance.md, "What
// sealing costs"). On PostgreSQL the server writes, not this process: nothing is reported, nor
// where /proc/self/io is missing.
type diskWrites struct {
	start int64
	ok    bool
}

// startDiskWrites starts counting for svc's benchmark.
func startDiskWrites(svc *servicetest.Service) diskWrites {
	if svc.Dialect != sqldb.SQLite {
		return diskWrites{}
	}
	n, ok := writeBytes()
	return diskWrites{start: n, ok: ok}
}

// report reports the bytes written per operation, as unit.
func (d diskWrites) report(b *testing.B, unit string) {
	if !d.ok {
		return
	}
	if n, ok := writeBytes(); ok && b.N > 0 {
		b.ReportMetric(float64(n-d.start)/float64(b.N), unit)
	}
}

// writeBytes reads write_bytes of /proc/self/io.
func writeBytes() (int64, bool) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if value, found := strings.CutPrefix(scanner.Text(), "write_bytes: "); found {
			n, err := strconv.ParseInt(value, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
