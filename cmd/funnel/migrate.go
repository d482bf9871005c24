package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/funnelhq/funnel/infra/sqldb"
)

var migrateCommand = &cli.Command{
	Name:   "migrate",
	Usage:  "apply pending schema migrations, name each, and exit (serve applies them at start too)",
	Before: noArguments,
	Action: func(ctx context.Context, cmd *cli.Command) error {
		db, err := sqldb.Open(ctx, cmd.String("database-url"))
		if err != nil {
			return err
		}
		defer db.Close()
		// A SQLite file that a service is using keeps its schema until the service stops.
		if err := db.Claim(); err != nil {
			return err
		}
		migrated, err := db.Migrate(ctx)
		if err != nil {
			return err
		}
		if len(migrated.Applied) == 0 {
			fmt.Printf("already up to date at version %d\n", migrated.Version)
			return nil
		}
		for _, name := range migrated.Applied {
			fmt.Printf("applied %s\n", name)
		}
		fmt.Printf("migrations applied: the schema is at version %d\n", migrated.Version)
		return nil
	},
}
