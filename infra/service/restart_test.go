package service_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// TestRestartKeepsReadModelsAndResumes stops a service and starts another on the same database.
// It proves that the read models survive a restart as they were, that the projections resume at
// their checkpoints without applying any event at or below them again, and that they apply what
// was appended while no service ran, and then new writes, once each.
//
// "Not again" is made visible with a marker: between the two runs the test writes, straight into
// the read model, a first name and an updated_at that no event carries onto the contact whose
// events end at the contacts checkpoint. Applying any of that contact's events again would
// rewrite both. (Accounts, keys, custom fields and tags are inserted by their projections: a
// second application would fail on the primary key and the service would never become ready.)
func TestRestartKeepsReadModelsAndResumes(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		dbURL := sqldbtest.URL(t, d)
		noConfig := func(*service.Config) {}

		first := servicetest.StartOn(t, dbURL, noConfig)
		acc := first.NewAccount(t)
		lead, vip := first.NewTag(t, acc.ID, "Lead"), first.NewTag(t, acc.ID, "VIP")
		company := first.NewCustomField(t, acc.ID, "Company")
		for i := range 24 {
			body := map[string]any{"email": fmt.Sprintf("c%d@example.com", i%8), "firstName": fmt.Sprintf("v%d", i)}
			if i%3 == 0 {
				body["tagNames"] = []string{"Lead"}
			}
			if i%4 == 0 {
				body["customFields"] = map[string]any{company: fmt.Sprintf("co%d", i)}
			}
			first.API.Post(t, "/api/v1/contacts", acc.Key, body).Expect(t, http.StatusOK)
		}
		// The last writes of the first run: a contact created, updated and tagged, so that the
		// events just below the contacts checkpoint are all of its kinds.
		marked := first.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "marked@example.com", "firstName": "Ada"}).
			Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		first.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "marked@example.com", "firstName": "Ada B", "tagNames": []string{"VIP", "Lead"}}).
			Expect(t, http.StatusOK)

		head, err := first.App.Store().Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := checkpoints(t, first.App.DB())
		if before["contacts"] != head {
			t.Fatalf("contacts checkpoint %d after the first run, want the log head %d", before["contacts"], head)
		}
		first.Stop()

		// Between the runs: the marker, and a write by another process (commands, no pipeline).
		const marker, markerUpdatedAt = "marker: not projected again", 1
		offline := openApp(t, dbURL)
		if _, err := offline.DB().Write.ExecContext(ctx, `UPDATE contacts SET first_name = $1, updated_at = $2 WHERE id = $3`, marker, markerUpdatedAt, marked); err != nil {
			t.Fatal(err)
		}
		meta := commands.Meta{AccountID: acc.ID, Actor: domain.OperatorActor, RequestID: "offline"}
		offlineName := "written while no service ran"
		res, err := offline.Commands().UpsertContact.Handle(ctx, commands.UpsertContact{Meta: meta, Email: "c1@example.com",
			Profile: domain.ContactProfile{FirstName: &offlineName}, Tags: domain.TagRequest{IDs: []string{vip}}})
		if err != nil {
			t.Fatal(err)
		}
		stopped := dumpReadModels(t, offline.DB())
		offline.Close()

		second := servicetest.StartOn(t, dbURL, noConfig)
		db := second.App.DB()
		after := checkpoints(t, db)
		for name, pos := range before {
			if after[name] < pos {
				t.Errorf("checkpoint %s went back from %d to %d", name, pos, after[name])
			}
		}
		if after["contacts"] != res.Position {
			t.Errorf("contacts checkpoint %d after the restart, want the offline write's position %d", after["contacts"], res.Position)
		}

		// Nothing at or below a checkpoint was applied again; the offline write was applied.
		got := second.API.Get(t, "/api/v1/contacts/"+marked, acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
		if got["firstName"] != marker || got["updatedAt"] != "1970-01-01T00:00:00.001Z" {
			t.Fatalf("the restart projected the marked contact's events again: %v", got)
		}
		if tags := servicetest.Strings(t, got["tagIds"]); !slices.Equal(tags, []string{vip, lead}) {
			t.Fatalf("marked contact's tags = %v", tags)
		}
		c1 := second.API.Get(t, "/api/v1/contacts/"+res.ContactID, acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
		if c1["firstName"] != offlineName || !slices.Contains(servicetest.Strings(t, c1["tagIds"]), vip) {
			t.Fatalf("the write made while no service ran is not projected: %v", c1)
		}
		// The offline process applied its write to the contacts inline, in the append's
		// transaction (eventstore.InlineProjection): no read model changed across the restart.
		restarted := dumpReadModels(t, db)
		for _, table := range service.RebuildableTables(db) {
			if !slices.Equal(stopped[table], restarted[table]) {
				t.Errorf("%s changed across the restart:\n%s", table, sqldbtest.DiffRows(stopped[table], restarted[table], 10))
			}
		}

		// The service keeps writing, and every new write is applied once.
		up := second.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "MARKED@example.com", "firstName": "Ada C"}).
			Expect(t, http.StatusOK).Object(t, "contact")
		if up["firstName"] != "Ada C" || !slices.Equal(servicetest.Strings(t, up["tagIds"]), []string{vip, lead}) {
			t.Fatalf("update after the restart = %v", up)
		}
		second.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "new@example.com", "tagNames": []string{"VIP"}}).Expect(t, http.StatusOK)
		head, err = second.App.Store().Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pos := checkpoints(t, db)["contacts"]; pos != head {
			t.Errorf("contacts checkpoint %d, want the log head %d", pos, head)
		}
		list := second.API.Get(t, "/api/v1/contacts?limit=100", acc.Key).Expect(t, http.StatusOK).List(t, "contacts")
		if len(list) != 10 { // c0..c7, marked, new
			t.Errorf("%d contacts after the restart, want 10", len(list))
		}
	})
}

// openApp opens the service on a database without running it: its commands append to the log,
// and nothing projects them.
func openApp(t *testing.T, dbURL string) *service.App {
	t.Helper()
	cfg := service.Defaults()
	cfg.DatabaseURL = dbURL
	cfg.SecretKey = servicetest.SecretKey(dbURL)
	a, err := service.Open(context.Background(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// checkpoints reads how far each projection is: its checkpoint, or for one that every append
// applies (flagged inline, infra/eventstore/inline.go) the end of the log.
func checkpoints(t *testing.T, db *sqldb.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Read.Query(`SELECT name, CASE WHEN inline = 1 THEN (SELECT COALESCE(MAX(position), 0) FROM events) ELSE position END FROM projection_checkpoints`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var pos int64
		if err := rows.Scan(&name, &pos); err != nil {
			t.Fatal(err)
		}
		out[name] = pos
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func dumpReadModels(t *testing.T, db *sqldb.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range service.RebuildableTables(db) {
		out[table] = sqldbtest.Dump(t, db.Read, table, "id")
	}
	return out
}
