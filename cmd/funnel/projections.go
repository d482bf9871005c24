package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"funnel/infra/sqldb"
)

var projectionsCommand = &cli.Command{
	Name:  "projections",
	Usage: "read-model status",
	Commands: []*cli.Command{{
		Name:  "list",
		Usage: "list every projection with its checkpoint and how far it is behind the log",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			db, err := sqldb.Open(ctx, cmd.String("database-url"))
			if err != nil {
				return err
			}
			defer db.Close()
			var head int64
			if err := db.Read.QueryRowContext(ctx, `SELECT position FROM event_log_head WHERE id = 1`).Scan(&head); err != nil {
				return fmt.Errorf("read the log head (has `funnel migrate` run?): %w", err)
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
	}},
}
