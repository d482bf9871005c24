package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// rebuild runs `funnel projections rebuild contacts` beside the serving process, as an operator
// would, and returns the log positions it replayed per second (the head it reached over its whole
// run, start-up and swap included).
func rebuild(bin, dbURL, secretKey string) float64 {
	start := time.Now()
	cmd := exec.Command(bin, "projections", "rebuild", "contacts")
	cmd.Env = append(os.Environ(), "FUNNEL_DATABASE_URL="+dbURL, "FUNNEL_SECRET_KEY="+secretKey)
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		fmt.Printf("rebuild failed: %v\n%s", err, out)
		return 0
	}
	var pos int64
	for _, line := range strings.Split(string(out), "\n") {
		if _, rest, ok := strings.Cut(line, "up to position "); ok {
			fmt.Sscan(rest, &pos)
		}
	}
	fmt.Printf("rebuild of contacts: %d events in %s, %.0f events/s\n", pos, took.Round(time.Millisecond), float64(pos)/took.Seconds())
	return float64(pos) / took.Seconds()
}
