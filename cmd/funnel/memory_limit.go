package main

import (
	"os"
	"runtime/debug"
)

// defaultMemoryLimit is the soft limit of the Go runtime's memory (heap, stacks, its own
// structures) that `funnel serve` sets when GOMEMLIMIT is not given: with it the garbage collector
// collects earlier as the heap nears the limit instead of letting it grow to twice what is live
// (GOGC=100), which under load left the service at 70-78 MB of RSS. The limit is soft: a live
// heap above it only makes collections more frequent (the runtime caps their CPU at half), never
// fails an allocation. With the binary's own pages (about 23 MB resident) it keeps the process
// under 60 MB (docs/performance.md, "Memory"): 26 MiB since the service's live heap under load is
// some 10-16 MB (a limit near the live heap would have the collector run without pause). GOMEMLIMIT,
// when set, wins: a host with memory to spare can trade it for less GC work.
const defaultMemoryLimit = 26 << 20

// limitMemory applies defaultMemoryLimit unless GOMEMLIMIT is set.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}
