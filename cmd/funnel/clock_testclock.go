//go:build testclock

package main

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v3"
)

// The test clock, compiled in only by `go build -tags testclock ./cmd/funnel`, so that an
// end-to-end test can let a billing period pass in a real process without waiting a month.
// FUNNEL_TEST_CLOCK_FILE (--test-clock-file) names a file holding a Go duration ("1680h"): the
// service's clock (app.Config.Now: the commands and the cancel-at-period-end timers) is the
// system's plus that offset, read from the file at every call, so a test moves time by writing
// the file (a temporary file renamed over it). A missing or unreadable file keeps the offset last
// read, 0 at start. A release build has neither the setting nor the code.

// clockFlags are the test clock's settings.
var clockFlags = []cli.Flag{
	&cli.StringFlag{Name: "test-clock-file", Sources: cli.EnvVars("FUNNEL_TEST_CLOCK_FILE"),
		Usage: "TEST BUILD ONLY: a file holding a duration added to the service's clock"},
}

// clockFrom is the service's clock: the system's moved by the file's offset, or nil (the
// system's) when no file is named.
func clockFrom(cmd *cli.Command) func() time.Time {
	path := cmd.String("test-clock-file")
	if path == "" {
		return nil
	}
	fmt.Fprintf(os.Stderr, "funnel: TEST BUILD: the clock runs ahead by the duration in %s\n", path)
	var offset atomic.Int64
	return func() time.Time {
		if raw, err := os.ReadFile(path); err == nil {
			if d, err := time.ParseDuration(strings.TrimSpace(string(raw))); err == nil {
				offset.Store(int64(d))
			}
		}
		return time.Now().Add(time.Duration(offset.Load()))
	}
}
