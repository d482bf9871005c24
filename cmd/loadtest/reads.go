package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/eventstore/eventstoretest"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// seedContacts appends synthetic contacts of the account straight to the log (as another process
// on the same database may), until the account holds about total. With wait, it then waits until
// the server's contacts read model has them: the list phase reads over that many. It returns the
// log's head.
func seedContacts(dbURL, account string, have, total int, wait bool) int64 {
	ctx := context.Background()
	db, err := sqldb.OpenExisting(ctx, dbURL)
	check(err)
	defer db.Close()
	store := eventstore.New(db)
	defer store.Close()
	store.SetInline(service.InlineProjections(db)...) // as every process that appends must
	start := time.Now()
	if total > have {
		_, err = eventstoretest.Generate(ctx, store, account, 0, total-have)
		check(err)
	}
	head, err := store.Head(ctx)
	check(err)
	for deadline := time.Now().Add(5 * time.Minute); wait; time.Sleep(200 * time.Millisecond) {
		var pos int64
		var inline int // applied by every append (infra/eventstore/inline.go): it has them all
		check(db.Read.QueryRowContext(ctx, `SELECT position, inline FROM projection_checkpoints WHERE name = 'contacts'`).Scan(&pos, &inline))
		if pos >= head || inline == 1 {
			break
		}
		if time.Now().After(deadline) {
			check(fmt.Errorf("the contacts read model is at %d of %d after 5 minutes", pos, head))
		}
	}
	fmt.Printf("seeded %d contacts (log head %d) in %s\n", max(0, total-have), head, time.Since(start).Round(time.Millisecond))
	return head
}

// list reads the first page of 50 contacts, newest first, from closed-loop clients.
func list(s *server, key string, clients int, d time.Duration) load {
	fmt.Printf("GET /api/v1/contacts?limit=50, %d clients:\n", clients)
	url := "http://" + s.api + "/api/v1/contacts?limit=50"
	return closedLoop(s, clients, d, func() (time.Duration, bool) {
		start := time.Now()
		status := get(url, "api.localhost", key)
		return time.Since(start), status == http.StatusOK
	})
}
