// Command funnel runs the funnel service and its operator tasks. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v3"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cli.Command{
		Name:  "funnel",
		Usage: "the integration backend of a marketing-funnel platform",
		Description: "Every setting is read from its FUNNEL_* environment variable; a flag of the same name\n" +
			"(FUNNEL_DATABASE_URL → --database-url) overrides it.",
		Flags:    append(configFlags, clockFlags...),
		Commands: []*cli.Command{serveCommand, migrateCommand, historyCommand, projectionsCommand},
	}
	if err := root.Run(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "funnel:", err)
		os.Exit(1)
	}
}
