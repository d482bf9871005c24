package service_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A read model rebuilt from the log while the service runs comes back exactly as the projection
// had built it, replaces a damaged one, and the running projection carries on from it: later
// writes land once, on top of the rebuilt rows.
func TestRebuildReplacesAReadModelWhileServing(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		svc := servicetest.Start(t, d, func(*service.Config) {})
		acc := svc.NewAccount(t)
		tag := svc.NewTag(t, acc.ID, "Lead")
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		for i := range 30 {
			body := map[string]any{"email": fmt.Sprintf("r%d@example.com", i), "firstName": fmt.Sprint(i), "tagIds": []string{tag}}
			svc.API.Post(t, "/api/v1/contacts", acc.Key, body).Expect(t, http.StatusOK)
		}
		svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": "r1@example.com"}).Expect(t, http.StatusCreated)
		db := svc.App.DB()
		want := sqldbtest.Dump(t, db.Read, "contacts", "id")
		wantCRMs := sqldbtest.Dump(t, db.Read, "crm_stages", "id")

		// Damage the live read models behind the projections' backs.
		for _, q := range []string{`UPDATE contacts SET first_name = 'damaged'`, `DELETE FROM contacts WHERE email_key = 'r7@example.com'`, `DELETE FROM crm_stages`} {
			if _, err := db.Write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		// A rebuild replays the log up to its head, which on PostgreSQL stays below the oldest
		// transaction of the database still running (the service's own, just after its writes):
		// wait until the head covers the writes above, or the replay may find nothing and leave
		// them all to the swap, which reports no progress.
		waitForHead(t, svc)
		var reported int64
		for _, name := range []string{"contacts", "crms"} {
			pos, err := service.Rebuild(ctx, svc.App.DB(), svc.App.SecretKey(), name, func(p, _ int64) { reported = p })
			if err != nil {
				t.Fatalf("rebuild %s: %v", name, err)
			}
			if pos == 0 || reported == 0 {
				t.Fatalf("rebuild %s reached position %d (progress said %d)", name, pos, reported)
			}
		}
		if diff := sqldbtest.DiffRows(want, sqldbtest.Dump(t, db.Read, "contacts", "id"), 5); diff != "" {
			t.Fatalf("rebuilt contacts differ from what the projection had built:\n%s", diff)
		}
		if diff := sqldbtest.DiffRows(wantCRMs, sqldbtest.Dump(t, db.Read, "crm_stages", "id"), 5); diff != "" {
			t.Fatalf("rebuilt stages differ:\n%s", diff)
		}

		// The running projection goes on from the rebuilt rows, applying each new event once.
		res := svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "r7@example.com", "tagIds": []string{tag}, "action": "remove"}).Expect(t, http.StatusOK)
		if tags := res.Object(t, "contact")["tagIds"].([]any); len(tags) != 0 {
			t.Fatalf("tags after a remove on the rebuilt read model = %v", tags)
		}
		res = svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "new-after-rebuild@example.com", "tagIds": []string{tag}}).Expect(t, http.StatusOK)
		if tags := res.Object(t, "contact")["tagIds"].([]any); len(tags) != 1 {
			t.Fatalf("a contact written after the rebuild has tags %v", tags)
		}
		if list := svc.API.Get(t, "/api/v1/contacts?limit=200", acc.Key).List(t, "contacts"); len(list) != 31 {
			t.Fatalf("%d contacts after the rebuild, want 31", len(list))
		}

		// Every read model, over data of every kind, comes back from the log exactly as the live
		// projection built it: on SQLite each copy is made from the table's own CREATE statement.
		form, fields := svc.NewForm(t, acc.ID, "Signup", []string{tag}, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		svc.API.Post(t, "/api/v1/forms/"+form+"/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: "form@example.com"}}).Expect(t, http.StatusCreated)
		calendar, _ := svc.NewEventType(t, acc.ID, "Intro", 30)
		svc.API.Post(t, "/api/v1/scheduling/"+calendar+"/bookings", acc.Key, map[string]any{"startTime": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)}).Expect(t, http.StatusCreated)
		svc.NewCustomField(t, acc.ID, "Company")
		for name, tables := range map[string][]string{
			"accounts": {"accounts", "api_keys", "custom_fields"}, "tags": {"tags"}, "contacts": {"contacts"},
			"crms": {"crms", "crm_stages"}, "leads": {"leads"}, "forms": {"forms"}, "form-submissions": {"form_submissions"},
			"event-types": {"event_types"}, "bookings": {"bookings"},
		} {
			before := map[string][]string{}
			for _, table := range tables {
				before[table] = sqldbtest.Dump(t, db.Read, table, "id")
				if len(before[table]) == 0 {
					t.Fatalf("%s is empty: the rebuild would prove nothing", table)
				}
			}
			if _, err := service.Rebuild(ctx, svc.App.DB(), svc.App.SecretKey(), name, nil); err != nil {
				t.Fatalf("rebuild %s: %v", name, err)
			}
			for _, table := range tables {
				if diff := sqldbtest.DiffRows(before[table], sqldbtest.Dump(t, db.Read, table, "id"), 5); diff != "" {
					t.Errorf("rebuilt %s differs:\n%s", table, diff)
				}
			}
		}

		if _, err := service.Rebuild(ctx, svc.App.DB(), svc.App.SecretKey(), "webhooks", nil); err == nil || !strings.Contains(err.Error(), "every delivery again") {
			t.Fatalf("rebuilding the webhook outbox: %v", err)
		}
		if _, err := service.Rebuild(ctx, svc.App.DB(), svc.App.SecretKey(), "nope", nil); err == nil || !strings.Contains(err.Error(), "contacts") {
			t.Fatalf("rebuilding an unknown projection: %v", err)
		}
	})
}

// waitForHead waits until the log's head, as a fresh reader of the database sees it (a rebuild
// opens its own), covers every event written. The service's own store would not do: its head also
// counts what its relay has read through, from memory, which on PostgreSQL may be above the
// server-wide horizon while other packages' tests hold transactions open (seen once: the wait
// passed, and the rebuild still replayed nothing).
func waitForHead(t *testing.T, svc *servicetest.Service) {
	t.Helper()
	ctx := context.Background()
	var last int64
	if err := svc.App.DB().Read.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		head, err := svc.App.DB().LogHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if head >= last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log's head stayed at %d, below the last event written (%d)", head, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A binary older than the schema does not rebuild a read model, even where it may serve beside a
// newer release (an additive migration): the rebuild would write its own projection's rows over
// every value the newer release wrote in the columns it added. Refused, with the table untouched.
func TestAnOlderBinaryDoesNotRebuildAReadModelOfANewerSchema(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		svc := servicetest.Start(t, dialect, func(*service.Config) {})
		acc := svc.NewAccount(t)
		svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "newer@example.com"}).Expect(t, http.StatusOK)
		db := svc.App.DB()
		waitForHead(t, svc)
		// A newer release's additive migration, and what its projection wrote.
		for _, q := range []string{
			`ALTER TABLE contacts ADD COLUMN newer_note TEXT NOT NULL DEFAULT ''`,
			`UPDATE contacts SET newer_note = 'written by the newer release'`,
			`INSERT INTO goose_db_version (version_id, is_applied) SELECT MAX(version_id) + 1, true FROM goose_db_version`,
		} {
			if _, err := db.Write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		_, err := service.Rebuild(ctx, db, svc.App.SecretKey(), "contacts", nil)
		if err == nil || !strings.Contains(err.Error(), "newer than this binary knows") {
			t.Errorf("a rebuild on a newer schema: %v, want a refusal", err)
		}
		var note string
		if err := db.Read.QueryRowContext(ctx, `SELECT newer_note FROM contacts`).Scan(&note); err != nil {
			t.Fatal(err)
		}
		if note != "written by the newer release" {
			t.Errorf("the newer release's column after an older binary's rebuild: %q", note)
		}
	})
}
