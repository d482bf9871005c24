package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/funnelhq/funnel/api/operator"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/sqldb"
)

var historyCommand = &cli.Command{
	Name:      "history",
	Usage:     "print the full ordered event history of one entity, one JSON object per line",
	UsageText: "funnel history --account ID (--contact ID | --email E | --subscription ID)",
	Before:    noArguments,
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
		// A newer release's log may hold what this binary would misread (sealed values as null).
		if err := db.RequireKnownSchema(ctx); err != nil {
			return err
		}
		// With the server key, the personal values show; an erased contact's show as null.
		// Without it, a log that holds personal values is refused (OpenLog): they would show as
		// null too, and a live contact would read as an erased one.
		store, err := service.OpenLog(ctx, db, cmd.String("secret-key"))
		if err != nil {
			return err
		}
		defer store.Close()
		entity, read, err := historyEntity(ctx, store, account, cmd.String("contact"), cmd.String("email"), cmd.String("subscription"))
		if err != nil {
			return err
		}
		return printHistory(ctx, os.Stdout, account, entity, read)
	},
}

// historyEntity is the entity whose history `funnel history` prints, and how to read it: a
// contact by id, the current contact of an email as the operator's history finds it
// (operator.ContactIDForEmail: never an erased one), or a subscription.
func historyEntity(ctx context.Context, store *eventstore.Store, account, contact, email, subscription string) (string, operator.HistoryReader, error) {
	switch {
	case contact != "":
		return contact, store.ReadContactHistory, nil
	case email != "":
		id, err := operator.ContactIDForEmail(ctx, account, email, store)
		return id, store.ReadContactHistory, err
	}
	return subscription, store.ReadSubscriptionHistory, nil
}

// historyPage is how many events `funnel history` reads at a time: a long history is streamed,
// never held in memory whole.
const historyPage = 500

// printHistory prints an entity's history, one JSON object per line, oldest first, reading it a
// page at a time from the log.
func printHistory(ctx context.Context, out io.Writer, account, entity string,
	read func(ctx context.Context, accountID, id string, after int64, limit int) ([]domain.Recorded, error)) error {
	enc := json.NewEncoder(out)
	after, printed := int64(0), 0
	for {
		events, err := read(ctx, account, entity, after, historyPage)
		if err != nil {
			return err
		}
		view, err := operator.HistoryView(events)
		if err != nil {
			return err
		}
		for _, e := range view {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		printed += len(events)
		if len(events) < historyPage {
			break
		}
		after = events[len(events)-1].Position
	}
	if printed == 0 {
		return fmt.Errorf("no history for that entity in account %s", account)
	}
	return nil
}
