package sqldb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A contact erased before lead titles were personal values kept them in the clear, in its lead
// events and in the leads read model. Migration 22 nulls those titles in the log, leaving the rest
// of each event as it was, and blanks them in the read model; a live contact's stay.
func TestErasedLeadTitlesMigrationForgetsTheTitlesOfContactsErasedBefore(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		if err := db.MigrateDownTo(ctx, 21); err != nil {
			t.Fatal(err)
		}
		store := eventstore.New(db) // as an earlier release wrote lead events: in the clear
		t.Cleanup(store.Close)
		meta := domain.Metadata{AccountID: "acc_1", Actor: string(domain.OperatorActor)}
		renamed := `Gone "Quoted" \ Person`
		appendContacts(t, store, meta, "ct_gone", "ct_live")
		for _, a := range []domain.StreamAppend{
			{StreamID: "lead_gone", Events: []domain.Event{
				domain.LeadCreated{LeadID: "lead_gone", AccountID: "acc_1", CRMID: "crm_1", StageID: "stg_1", ContactID: "ct_gone", Title: "gone@example.com"},
				domain.LeadUpdated{LeadID: "lead_gone", ContactID: "ct_gone", Title: &renamed}}},
			{StreamID: "lead_live", Events: []domain.Event{
				domain.LeadCreated{LeadID: "lead_live", AccountID: "acc_1", CRMID: "crm_1", StageID: "stg_1", ContactID: "ct_live", Title: "live@example.com"}}},
		} {
			if _, err := store.Append(ctx, meta, a); err != nil {
				t.Fatal(err)
			}
		}
		for _, stmt := range []string{
			`INSERT INTO person_keys (contact_id, account_id, sealed_key, erased_at) VALUES ('ct_gone', 'acc_1', NULL, 1), ('ct_live', 'acc_1', 'sealed', NULL)`,
			`INSERT INTO leads (id, account_id, crm_id, stage_id, contact_id, title, amount, created_at, updated_at, seq)
			 VALUES ('lead_gone', 'acc_1', 'crm_1', 'stg_1', 'ct_gone', 'Gone Person', 0, 0, 0, 1), ('lead_live', 'acc_1', 'crm_1', 'stg_1', 'ct_live', 'live@example.com', 0, 0, 0, 2)`,
		} {
			if _, err := db.Write.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		before := leadEventsData(t, db)

		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}

		after := leadEventsData(t, db)
		for stream, datas := range before {
			for i, was := range datas {
				now := after[stream][i]
				title := gjson.Get(now, "title")
				switch {
				case stream == "lead_live" && title.String() != "live@example.com":
					t.Errorf("the live contact's lead reads %s", now)
				case stream == "lead_gone" && title.Type != gjson.Null:
					t.Errorf("the erased contact's lead event reads %s", now)
				case stream == "lead_gone" && strings.Replace(was, `"title":`+gjson.Get(was, "title").Raw, `"title":null`, 1) != now:
					t.Errorf("the erased contact's lead event was %s, is %s: more than its title changed", was, now)
				}
			}
		}
		titles := map[string]string{}
		rows, err := db.Read.QueryContext(ctx, `SELECT id, title FROM leads`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, title string
			if err := rows.Scan(&id, &title); err != nil {
				t.Fatal(err)
			}
			titles[id] = title
		}
		if titles["lead_gone"] != "" || titles["lead_live"] != "live@example.com" {
			t.Errorf("the leads' titles are %v", titles)
		}
	})
}

// leadEventsData returns the data of the lead events, by stream, in order.
func leadEventsData(t *testing.T, db *sqldb.DB) map[string][]string {
	t.Helper()
	rows, err := db.Read.Query(`SELECT stream_id, data FROM events WHERE type IN ('LeadCreated', 'LeadUpdated') ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var stream, data string
		if err := rows.Scan(&stream, &data); err != nil {
			t.Fatal(err)
		}
		out[stream] = append(out[stream], data)
	}
	return out
}

// appendContacts appends the creation of each contact, in the clear, as an earlier release did:
// a person's key, and an erasure's row, belong to a contact whose stream has begun.
func appendContacts(t *testing.T, store *eventstore.Store, meta domain.Metadata, contactIDs ...string) {
	t.Helper()
	for _, id := range contactIDs {
		created := domain.ContactCreated{ContactID: id, AccountID: meta.AccountID, Email: id + "@example.com"}
		if _, err := store.Append(context.Background(), meta, domain.StreamAppend{StreamID: id, Events: []domain.Event{created}}); err != nil {
			t.Fatal(err)
		}
	}
}
