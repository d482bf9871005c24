package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/funnelhq/funnel/api/operator"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
)

var historyCommand = &cli.Command{
	Name:      "history",
	Usage:     "print the full ordered event history of one entity, one JSON object per line",
	UsageText: "funnel history --account ID (--contact ID | --email E | --subscription ID)",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "account", Required: true, Usage: "account id"},
		&cli.StringFlag{Name: "contact", Usage: "contact id"},
		&cli.StringFlag{Name: "email", Usage: "contact email"},
		&cli.StringFlag{Name: "subscription", Usage: "subscription id"},
	},
	Action: func(ctx context.Context, cmd *cli.Command) error {
		account := cmd.String("account")
		given := 0
		for _, f := range []string{"contact", "email", "subscription"} {
			if cmd.String(f) != "" {
				given++
			}
		}
		if given != 1 {
			return fmt.Errorf("give exactly one of --contact, --email, --subscription")
		}
		db, err := sqldb.OpenExisting(ctx, cmd.String("database-url"))
		if err != nil {
			return err
		}
		defer db.Close()
		store := eventstore.New(db)
		defer store.Close()
		var events []domain.Recorded
		switch {
		case cmd.String("contact") != "":
			events, err = store.ReadContactHistory(ctx, account, cmd.String("contact"))
		case cmd.String("email") != "":
			events, err = store.ReadContactHistory(ctx, account, domain.ContactIDFor(account, cmd.String("email")))
		default:
			events, err = store.ReadSubscriptionHistory(ctx, account, cmd.String("subscription"))
		}
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return fmt.Errorf("no history for that entity in account %s", account)
		}
		view, err := operator.HistoryView(events)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(os.Stdout)
		for _, e := range view {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	},
}
