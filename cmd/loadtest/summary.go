package main

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"text/tabwriter"
)

// result is one row of the summary: a measured value, with its ratio to the pgbench insert of the
// same number of clients where a rate has one, and whether it met its target.
type result struct {
	name    string
	value   float64
	unit    string
	clients int    // the pgbench run it is compared with (0: none)
	target  string // as the issue states it
	met     func(value, ratio float64) bool
	extra   string
	cpu     *cpuUse // the machine's CPU time per request, for a rate measured here
}

// printSummary prints every result with its ratio to pgbench (when measured) and the verdict.
func printSummary(results []result, baseline map[int]pgbenchRun) {
	fmt.Println("\n== summary (ratio: to a one-row pgbench insert at the same clients, this run)")
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RESULT\tVALUE\tRATIO\tTARGET\tMET")
	for _, r := range results {
		ratio, shown := 0.0, "-"
		if base := baseline[r.clients].tps; r.clients > 0 && base > 0 {
			ratio = r.value / base
			shown = fmt.Sprintf("%.2f×", ratio)
		}
		verdict := "missed"
		switch {
		case r.target == "-":
			verdict = "-"
		case r.clients > 0 && baseline[r.clients].tps == 0 && r.needsRatio():
			verdict = "n/a (no pgbench)"
		case r.met(r.value, ratio):
			verdict = "met"
		}
		fmt.Fprintf(w, "%s\t%.0f %s%s\t%s\t%s\t%s\n", r.name, r.value, r.unit, r.extra, shown, r.target, verdict)
	}
	w.Flush()
	for _, c := range slices.Sorted(maps.Keys(baseline)) {
		fmt.Printf("pgbench at %d clients: %.0f inserts/s\n", c, baseline[c].tps)
	}
	printCPUCeilings(results, baseline)
}

// printCPUCeilings shows, for each rate measured with the machine's CPU time per request, the most
// that rate could be with every core busy at that cost: the service, this script and the database
// share the cores, so a ratio to pgbench above that ceiling needs less CPU per request, not less
// waiting.
func printCPUCeilings(results []result, baseline map[int]pgbenchRun) {
	fmt.Printf("\n== CPU time of the whole machine per request (%d cores: the service, this script, the database, the kernel)\n", runtime.NumCPU())
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RESULT\tCPU PER REQUEST\tMACHINE BUSY\tCEILING, EVERY CORE BUSY\tCEILING RATIO")
	row := func(name string, clients int, cpu *cpuUse) {
		if cpu == nil || cpu.perRequest <= 0 {
			return
		}
		ceiling := float64(runtime.NumCPU()) / cpu.perRequest.Seconds()
		ratio := "-"
		if base := baseline[clients].tps; clients > 0 && base > 0 {
			ratio = fmt.Sprintf("%.2f×", ceiling/base)
		}
		fmt.Fprintf(w, "%s\t%s\t%.0f%%\t%.0f /s\t%s\n", name, ms(cpu.perRequest), 100*cpu.busy, ceiling, ratio)
	}
	for _, c := range slices.Sorted(maps.Keys(baseline)) {
		row(fmt.Sprintf("pgbench one-row insert, %d clients", c), c, baseline[c].cpu)
	}
	for _, r := range results {
		row(r.name, r.clients, r.cpu)
	}
	w.Flush()
}

// needsRatio tells whether the verdict depends on the ratio to pgbench.
func (r result) needsRatio() bool { return r.met(r.value, 0) != r.met(r.value, 1e9) }
