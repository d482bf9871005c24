package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/sqldb"
)

var projectionsCommand = &cli.Command{
	Name:     "projections",
	Usage:    "read-model status, and rebuilds",
	Commands: []*cli.Command{listProjectionsCommand, rebuildProjectionCommand},
}

var rebuildProjectionCommand = &cli.Command{
	Name:  "rebuild",
	Usage: "rebuild one read model from the event log and swap it in while the old one keeps serving",
	Description: "It runs beside a serving process, on SQLite too, and needs the schema of this binary:\n" +
		"it applies no migration (run funnel migrate first).",
	UsageText: "funnel projections rebuild NAME",
	Action: func(ctx context.Context, cmd *cli.Command) error {
		if cmd.Args().Len() != 1 {
			return fmt.Errorf("give the name of one projection (see funnel projections list)")
		}
		name := cmd.Args().First()
		// A rebuild works on a database the service set up; it must not create one.
		db, err := sqldb.OpenExisting(ctx, cmd.String("database-url"))
		if err != nil {
			return err
		}
		defer db.Close()
		last := time.Now()
		pos, err := service.Rebuild(ctx, db, cmd.String("secret-key"), name, func(pos, head int64) {
			if time.Since(last) > time.Second {
				fmt.Printf("%s: replayed %d of %d events\n", name, pos, head)
				last = time.Now()
			}
		})
		if err != nil {
			return err
		}
		fmt.Printf("%s: rebuilt from the log up to position %d and swapped in\n", name, pos)
		return nil
	},
}

var listProjectionsCommand = &cli.Command{
	Name:  "list",
	Usage: "list every projection with how far it reflects the log and how many events it has yet to apply",
	Description: "POSITION is how far the read model reflects the log; BEHIND counts the events it has yet to\n" +
		"apply. Events of types a projection does not handle change nothing in it: they are not counted.",
	Before: noArguments,
	Action: func(ctx context.Context, cmd *cli.Command) error {
		db, err := sqldb.OpenExisting(ctx, cmd.String("database-url"))
		if err != nil {
			return err
		}
		defer db.Close()
		head, statuses, err := service.ProjectionStatus(ctx, db)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "PROJECTION\tPOSITION\tBEHIND")
		for _, s := range statuses {
			fmt.Fprintf(w, "%s\t%d\t%d\n", s.Name, s.Position, s.Behind)
		}
		fmt.Fprintf(w, "(log head)\t%d\t\n", head)
		return w.Flush()
	},
}
