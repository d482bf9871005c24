package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkEraseContactWith1000Events measures one erasure, as the API answers it (the key
// destroyed, every read model and the outbox done, the SQLite WAL truncated), of a contact whose
// history holds 1,000 events, in both storage modes.
func BenchmarkEraseContactWith1000Events(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			svc := servicetest.Start(b, dialect, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			ctx := context.Background()
			cmds := svc.App.Commands()
			meta := commands.Meta{AccountID: acc.ID, Actor: domain.OperatorActor}
			// The service's start (PostgreSQL's migrations take about 0.6 s) is not the erasure.
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				email := fmt.Sprintf("long-%d@example.com", i)
				var contactID string
				for n := range 1000 {
					name := fmt.Sprintf("Name %d", n)
					res, err := cmds.UpsertContact.Handle(ctx, commands.UpsertContact{Meta: meta, Email: email, Profile: domain.ContactProfile{FirstName: &name}})
					if err != nil {
						b.Fatal(err)
					}
					contactID = res.ContactID
				}
				b.StartTimer()
				if _, err := cmds.EraseContact.Handle(ctx, commands.EraseContact{Meta: meta, ContactID: contactID}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
