package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// goBenchRates reads the output of `go test -bench` (make bench saves it) and returns a result
// for each rate a benchmark reported (a metric whose unit ends in /s: appends/s, events/s), to be
// shown as a ratio to pgbench at 8 clients beside the load script's own.
func goBenchRates(path string) []result {
	f, err := os.Open(path)
	if err != nil {
		fmt.Printf("go benchmarks: %v\n", err)
		return nil
	}
	defer f.Close()
	var out []result
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		// name, iterations, then value-unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			unit := fields[i+1]
			if !strings.HasSuffix(unit, "/s") {
				continue
			}
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			r := result{name: fields[0], value: v, unit: unit, clients: 8, target: "-", met: func(float64, float64) bool { return true }}
			if strings.HasPrefix(fields[0], "BenchmarkRebuild/") && unit == "events/s" {
				r.target, r.met = "≥ 100,000 events/s", func(v, _ float64) bool { return v >= 100_000 }
			}
			out = append(out, r)
		}
	}
	return out
}
