package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// showsAny tells whether a response shows one of values, in any case.
func showsAny(res servicetest.Response, values ...string) bool {
	raw := strings.ToLower(string(res.Raw))
	for _, v := range values {
		if strings.Contains(raw, strings.ToLower(v)) {
			return true
		}
	}
	return false
}

// dataOf returns the data of the events of a type in a history.
func dataOf(events []map[string]any, eventType string) []map[string]any {
	var out []map[string]any
	for _, e := range events {
		if e["type"] == eventType {
			out = append(out, e["data"].(map[string]any))
		}
	}
	return out
}

// A lead's title is personal data of its contact (decisions.md "Erasure": a lead's contact
// email): a lead opened without one (a tag's crm.move, or POST /api/v1/crms/:crmId/leads without
// "title") is titled with the contact's email, and a title set later often names the person. The
// contact's erasure blanks the titles of its leads everywhere: the leads endpoints, the history
// (null), a kept Idempotency-Key answer, a copy of the storage, and a rebuild of the leads read
// model. The leads keep their CRM, stage and amount, and still move and take amounts; another
// person's lead keeps its title.
func TestErasureBlanksTheTitlesOfTheContactsLeads(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		databaseURL := sqldbtest.URL(t, dialect)
		svc := servicetest.StartOn(t, databaseURL, func(*service.Config) {})
		db := svc.App.DB()
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		sales := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		support := svc.NewCRM(t, acc.ID, "Support", "Open")
		tag := svc.NewTag(t, acc.ID, "Prospect", moveTo(sales.ID, sales.Stages[0]))
		const email, title = "qzleadtitle.person@example.com", "Qzwinifred renewal"
		values := []string{email, title}

		// The tag's crm.move opens a lead in Sales, titled with the email; so does a lead posted
		// without a title in Support.
		contactID := upsert(t, svc, acc.Key, map[string]any{"email": email, "tagIds": []string{tag}}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		openSupportLead := servicetest.Request{Method: http.MethodPost, Path: "/api/v1/crms/" + support.ID + "/leads", Token: acc.Key,
			Headers: map[string]string{"Idempotency-Key": "lead-title-1"}, Body: map[string]any{"contactEmail": email, "stageId": support.Stages[0]}}
		supportLead := svc.API.Do(t, openSupportLead).Expect(t, http.StatusCreated).Object(t, "lead")
		salesLeads := svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads", acc.Key).Expect(t, http.StatusOK).List(t, "leads")
		if len(salesLeads) != 1 || salesLeads[0]["title"] != email || supportLead["title"] != email {
			t.Fatalf("the leads opened without a title: %v and %v, want both titled %s", salesLeads, supportLead, email)
		}
		salesPath := "/api/v1/crms/" + sales.ID + "/leads/" + salesLeads[0]["id"].(string)
		supportPath := "/api/v1/crms/" + support.ID + "/leads/" + supportLead["id"].(string)
		svc.API.Patch(t, salesPath, acc.Key, map[string]any{"title": title, "amount": 5000}).Expect(t, http.StatusOK)
		const otherTitle = "Qzkept other deal"
		other := svc.API.Post(t, "/api/v1/crms/"+support.ID+"/leads", acc.Key, map[string]any{"contactEmail": "qzleadtitle.other@example.com", "title": otherTitle}).
			Expect(t, http.StatusCreated).Object(t, "lead")
		otherPath := "/api/v1/crms/" + support.ID + "/leads/" + other["id"].(string)
		if found := storageHoldsOf(t, dialect, databaseURL, db, values); len(found) != len(values) {
			t.Fatalf("before the erasure the storage scan finds %v of %v", found, values)
		}

		svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)
		// The answer kept for the key showed the title: a retry is told the contact is gone.
		if msg := svc.API.Do(t, openSupportLead).ExpectError(t, http.StatusNotFound); msg != "contact not found" {
			t.Errorf("a retry of the keyed lead after the erasure answers %q", msg)
		}

		check := func(when string) {
			t.Helper()
			sold := svc.API.Get(t, salesPath, acc.Key).Expect(t, http.StatusOK).Object(t, "lead")
			if sold["title"] != "" || sold["contactId"] != contactID || sold["crmId"] != sales.ID || sold["stageId"] != sales.Stages[0] || sold["amount"] != float64(5000) {
				t.Errorf("%s the Sales lead reads %v, want its title blank and the rest kept", when, sold)
			}
			if got := svc.API.Get(t, supportPath, acc.Key).Expect(t, http.StatusOK).Object(t, "lead"); got["title"] != "" {
				t.Errorf("%s the Support lead reads %v, want its title blank", when, got)
			}
			if got := svc.API.Get(t, otherPath, acc.Key).Expect(t, http.StatusOK).Object(t, "lead"); got["title"] != otherTitle {
				t.Errorf("%s another person's lead reads %v, want its title %q kept", when, got, otherTitle)
			}
			for _, p := range []string{"/api/v1/crms/" + sales.ID + "/leads", "/api/v1/crms/" + support.ID + "/leads", salesPath, supportPath} {
				if res := svc.API.Get(t, p, acc.Key).Expect(t, http.StatusOK); showsAny(res, values...) {
					t.Errorf("%s GET %s shows the erased person: %s", when, p, res.Raw)
				}
			}
			for _, p := range []string{admin + "/crms/" + sales.ID + "/leads", admin + "/crms/" + support.ID + "/leads", admin + "/history?contactId=" + contactID} {
				if res := svc.Operator.Get(t, p, "").Expect(t, http.StatusOK); showsAny(res, values...) {
					t.Errorf("%s GET %s shows the erased person: %s", when, p, res.Raw)
				}
			}
			events := history(t, svc, acc.ID, contactID)
			created, updated := dataOf(events, "LeadCreated"), dataOf(events, "LeadUpdated")
			if len(created) != 2 || len(updated) != 1 {
				t.Fatalf("%s the history has %d LeadCreated and %d LeadUpdated, want 2 and 1", when, len(created), len(updated))
			}
			for _, d := range append(created, updated...) {
				if d["title"] != nil || d["contactId"] != contactID || d["leadId"] == "" {
					t.Errorf("%s a lead event of the history reads %v, want its title null", when, d)
				}
			}
			if updated[0]["amount"] != float64(5000) {
				t.Errorf("%s the LeadUpdated reads %v, want its amount kept", when, updated[0])
			}
			if found := storageHoldsOf(t, dialect, databaseURL, db, values); len(found) > 0 {
				t.Errorf("%s the storage still holds %v", when, found)
			}
		}
		check("after the erasure")

		// A rebuild reads the sealed titles as null: nothing comes back.
		if _, err := service.Rebuild(ctx, db, svc.App.SecretKey(), "leads", nil); err != nil {
			t.Fatal(err)
		}
		if err := db.ScrubErased(ctx); err != nil {
			t.Fatal(err)
		}
		check("after a rebuild of the leads")

		// The lead still moves and takes an amount; a new title would be the erased person's
		// again, and is refused as every other write of their values is.
		moved := svc.API.Patch(t, salesPath, acc.Key, map[string]any{"stageId": sales.Stages[1], "amount": 7000}).Expect(t, http.StatusOK).Object(t, "lead")
		if moved["title"] != "" || moved["stageId"] != sales.Stages[1] || moved["amount"] != float64(7000) {
			t.Errorf("the erased contact's lead after a move: %v", moved)
		}
		svc.API.Patch(t, salesPath, acc.Key, map[string]any{"title": "Qzanother title"}).ExpectError(t, http.StatusNotFound)
	})
}

// Lead titles recorded in the clear, before they were sealed, are erased too: the erasure nulls
// them in the log itself (infra/eventstore/legacy_values.go), for a contact whose own events are
// in the clear as well (recorded before any sealing) and for one whose own events are sealed but
// whose leads' titles were recorded by a build that did not seal them yet.
func TestErasureOfLeadTitlesRecordedInTheClear(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		databaseURL := sqldbtest.URL(t, dialect)
		first := servicetest.StartOn(t, databaseURL, func(*service.Config) {})
		acc := first.NewAccount(t)
		crm := first.NewCRM(t, acc.ID, "Sales", "New")
		const sealedEmail, plainEmail = "qzsealed.leadtitle@example.com", "qzplain.leadtitle@example.com"
		const sealedTitle, plainTitle = "Qzsealedname deal", "Qzplainname deal"
		sealedID := upsert(t, first, acc.Key, map[string]any{"email": sealedEmail}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		first.Stop()

		// The lead events as a build that did not seal titles appended them.
		db, err := sqldb.Open(ctx, databaseURL)
		if err != nil {
			t.Fatal(err)
		}
		plainID := domain.ContactIDFor(acc.ID, plainEmail)
		plain := eventstore.New(db)
		plain.SetInline(service.InlineProjections(db)...)
		lead := func(contactID, email, renamed string) domain.StreamAppend {
			id := domain.NewID("lead")
			return domain.StreamAppend{StreamID: id, Events: []domain.Event{
				domain.LeadCreated{LeadID: id, AccountID: acc.ID, CRMID: crm.ID, StageID: crm.Stages[0], ContactID: contactID, Title: email},
				domain.LeadUpdated{LeadID: id, ContactID: contactID, Title: &renamed},
			}}
		}
		if _, err := plain.Append(ctx, domain.Metadata{AccountID: acc.ID, Actor: "operator"},
			domain.StreamAppend{StreamID: plainID, Events: []domain.Event{domain.ContactCreated{ContactID: plainID, AccountID: acc.ID, Email: plainEmail}}},
			lead(plainID, plainEmail, plainTitle),
			lead(sealedID, sealedEmail, sealedTitle),
		); err != nil {
			t.Fatal(err)
		}
		plain.Close()
		db.Close()

		svc := servicetest.StartOn(t, databaseURL, func(*service.Config) {})
		values := []string{sealedEmail, plainEmail, sealedTitle, plainTitle}
		if found := storageHoldsOf(t, dialect, databaseURL, svc.App.DB(), values); len(found) != len(values) {
			t.Fatalf("before the erasure the storage scan finds %v of %v", found, values)
		}
		for _, id := range []string{plainID, sealedID} {
			svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+id+"/erase", "", nil).Expect(t, http.StatusOK)
		}
		if found := storageHoldsOf(t, dialect, databaseURL, svc.App.DB(), values); len(found) > 0 {
			t.Errorf("after the erasures the storage still holds %v", found)
		}
		for _, id := range []string{plainID, sealedID} {
			events := history(t, svc, acc.ID, id)
			leadEvents := append(dataOf(events, "LeadCreated"), dataOf(events, "LeadUpdated")...)
			if len(leadEvents) != 2 {
				t.Fatalf("the history of %s has %d lead events, want 2: %v", id, len(leadEvents), events)
			}
			for _, d := range leadEvents {
				if d["title"] != nil || d["contactId"] != id {
					t.Errorf("a lead event of %s reads %v, want its title null", id, d)
				}
			}
		}
		leads := svc.API.Get(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key).Expect(t, http.StatusOK).List(t, "leads")
		if len(leads) != 2 || leads[0]["title"] != "" || leads[1]["title"] != "" {
			t.Errorf("the leads after the erasures: %v, want two, their titles blank", leads)
		}
	})
}

// New titles for a contact's lead racing the contact's erasure either land before it, and are
// blanked with the rest, or are refused after it (404): no title written by a 200 answered around
// the erasure is readable afterwards. Moves of the lead racing it too (still allowed after the
// erasure) bring no title back either: the leads read model writes a moved lead's row whole.
func TestLeadTitlesRacingAnErasureDoNotSurviveIt(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		for round := range 6 {
			lead := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": fmt.Sprintf("qzrace.lead%d@example.com", round), "title": "Qzrace first"}).
				Expect(t, http.StatusCreated).Object(t, "lead")
			contactID, leadPath := lead["contactId"].(string), "/api/v1/crms/"+crm.ID+"/leads/"+lead["id"].(string)
			var wg sync.WaitGroup
			statuses := make(chan int, 64)
			start := make(chan struct{})
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := range 10 {
						body := map[string]any{"title": fmt.Sprintf("Qzracetitle %d-%d-%d", round, w, i)}
						if w >= 4 { // a move, which writes no title
							body = map[string]any{"stageId": crm.Stages[i%2]}
						}
						res := svc.API.Do(t, servicetest.Request{Method: http.MethodPatch, Path: leadPath, Token: acc.Key, Body: body})
						statuses <- res.Status
					}
				}()
			}
			close(start)
			time.Sleep(time.Duration(round) * 2 * time.Millisecond)
			svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)
			wg.Wait()
			close(statuses)
			for s := range statuses {
				if s != http.StatusOK && s != http.StatusNotFound {
					t.Errorf("a write of the lead racing the erasure answered %d", s)
				}
			}
			if got := svc.API.Get(t, leadPath, acc.Key).Expect(t, http.StatusOK).Object(t, "lead"); got["title"] != "" {
				t.Errorf("round %d: after the erasure the lead reads title %q, want blank", round, got["title"])
			}
			events := history(t, svc, acc.ID, contactID)
			erased := false
			for _, e := range events {
				if erased && e["type"] == "LeadUpdated" {
					t.Errorf("round %d: a new title (LeadUpdated) recorded after the erasure: %v", round, e["data"])
				}
				erased = erased || e["type"] == "ContactErased"
			}
		}
	})
}
