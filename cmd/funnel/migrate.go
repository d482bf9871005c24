package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/funnelhq/funnel/infra/sqldb"
)

var migrateCommand = &cli.Command{
	Name:  "migrate",
	Usage: "apply pending schema migrations and exit (serve applies them at start too)",
	Action: func(ctx context.Context, cmd *cli.Command) error {
		db, err := sqldb.Open(ctx, cmd.String("database-url"))
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.Migrate(ctx); err != nil {
			return err
		}
		fmt.Println("migrations applied")
		return nil
	},
}
