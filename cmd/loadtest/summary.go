package main

import (
	"fmt"
	"maps"
	"os"
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
}

// printSummary prints every result with its ratio to pgbench (when measured) and the verdict.
func printSummary(results []result, baseline map[int]float64) {
	fmt.Println("\n== summary (ratio: to a one-row pgbench insert at the same clients, this run)")
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RESULT\tVALUE\tRATIO\tTARGET\tMET")
	for _, r := range results {
		ratio, shown := 0.0, "-"
		if base := baseline[r.clients]; r.clients > 0 && base > 0 {
			ratio = r.value / base
			shown = fmt.Sprintf("%.2f×", ratio)
		}
		verdict := "missed"
		switch {
		case r.target == "-":
			verdict = "-"
		case r.clients > 0 && baseline[r.clients] == 0 && r.needsRatio():
			verdict = "n/a (no pgbench)"
		case r.met(r.value, ratio):
			verdict = "met"
		}
		fmt.Fprintf(w, "%s\t%.0f %s%s\t%s\t%s\t%s\n", r.name, r.value, r.unit, r.extra, shown, r.target, verdict)
	}
	w.Flush()
	for _, c := range slices.Sorted(maps.Keys(baseline)) {
		fmt.Printf("pgbench at %d clients: %.0f inserts/s\n", c, baseline[c])
	}
}

// needsRatio tells whether the verdict depends on the ratio to pgbench.
func (r result) needsRatio() bool { return r.met(r.value, 0) != r.met(r.value, 1e9) }
