package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/funnelhq/funnel/app"
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
		pos, err := app.Rebuild(ctx, db, name, func(pos, head int64) {
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
	Usage: "list every projection with its checkpoint and how far it is behind the log",
	Action: func(ctx context.Context, cmd *cli.Command) error {
		db, err := sqldb.OpenExisting(ctx, cmd.String("database-url"))
		if err != nil {
			return err
		}
		defer db.Close()
		var head int64
		if err := db.Read.QueryRowContext(ctx, `SELECT position FROM event_log_head WHERE id = 1`).Scan(&head); err != nil {
			return fmt.Errorf("read the log head: %w", err)
		}
		rows, err := db.Read.QueryContext(ctx, `SELECT name, position FROM projection_checkpoints ORDER BY name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "PROJECTION\tPOSITION\tBEHIND")
		for rows.Next() {
			var name string
			var pos int64
			if err := rows.Scan(&name, &pos); err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\t%d\t%d\n", name, pos, head-pos)
		}
		fmt.Fprintf(w, "(log head)\t%d\t\n", head)
		if err := rows.Err(); err != nil {
			return err
		}
		return w.Flush()
	},
}
