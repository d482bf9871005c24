package commands_test

import (
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkContactWrite measures one write to a contact whose stream holds 10 or 6,000 events
// (UpsertContact renaming it: one event read-decided-appended), in both storage modes, side by
// side:
//   - kept: as the service runs, on top of the state kept from the previous write;
//   - cold: every write by a fresh process, which replays the whole stream: what every write
//     cost before states were kept, and what the first write to a contact after a start costs.
//
// The contact is replaced by a fresh one of the same length whenever the writes have grown its
// stream by a tenth (the 10-event one before every write), outside the timer.
func BenchmarkContactWrite(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			store := eventstore.New(sqldbtest.Open(b, dialect))
			b.Cleanup(store.Close)
			const account = "acc_bench"
			kept := commands.NewUpsertContactHandler(commands.NewRepository(store, 0), nil, zap.NewNop(), noObserver{})
			contacts := 0 // across runs: the benchmark function runs again with a larger b.N
			for _, events := range []int{10, 6000} {
				for _, mode := range []string{"kept", "cold"} {
					b.Run(fmt.Sprintf("events=%d/%s", events, mode), func(b *testing.B) {
						growth := max(1, events/10)
						written := growth
						var email string
						b.ResetTimer()
						for i := range b.N {
							if written == growth {
								b.StopTimer()
								contacts++
								email = fmt.Sprintf("bench-%d-%s-%d@example.com", events, mode, contacts)
								seedContact(b, store, account, email, events)
								if mode == "kept" {
									rename(b, kept, account, email, "Warm")
								}
								written = 0
								b.StartTimer()
							}
							h := kept
							if mode == "cold" {
								h = commands.NewUpsertContactHandler(commands.NewRepository(store, 0), nil, zap.NewNop(), noObserver{})
							}
							rename(b, h, account, email, fmt.Sprintf("Name %d", i))
							written++
						}
					})
				}
			}
		})
	}
}
