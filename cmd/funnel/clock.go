//go:build !testclock

package main

import (
	"time"

	"github.com/urfave/cli/v3"
)

// A release build runs on the system's clock, and no setting can move it. Only a build with
// `-tags testclock` (clock_testclock.go, for end-to-end tests) has a clock that can be moved.

// clockFlags are the clock's settings: none.
var clockFlags []cli.Flag

// clockFrom is the service's clock (app.Config.Now): nil, the system's.
func clockFrom(*cli.Command) func() time.Time { return nil }
