// Command funnel runs the funnel service and its operator tasks. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
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

// noArguments is the Before of every command that takes no arguments: it refuses any, which the
// command would otherwise ignore without a word (`funnel migrate extra-arg`, or `serve --demo
// true`, whose true is no value of the switch).
func noArguments(ctx context.Context, cmd *cli.Command) (context.Context, error) {
	if cmd.Args().Present() {
		name := strings.TrimPrefix(cmd.FullName(), cmd.Root().Name+" ")
		return ctx, fmt.Errorf("%s takes no arguments, not %q", name, cmd.Args().Slice())
	}
	return ctx, nil
}
