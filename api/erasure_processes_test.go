package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Two processes on one PostgreSQL database: one erases a contact the other has written and read
// (so it keeps the contact's state, the key that sealed it, the contact it wrote). The other then
// serves nothing of it: the contact is 404, its history shows null, and its next upsert of the
// email is a new contact.
func TestAnotherProcessServesNothingOfAnErasedContact(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	noLimits := func(c *service.Config) { c.RateLimits = false }
	first := servicetest.StartOn(t, url, noLimits)
	second := servicetest.StartOn(t, url, noLimits)
	acc := first.NewAccount(t)
	email := "qzother.process@example.com"
	body := map[string]any{"email": email, "firstName": "Quirinella"}
	contactID := second.API.Post(t, "/api/v1/contacts", acc.Key, body).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
	second.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email, "lastName": "Zorbeck"}).Expect(t, http.StatusOK)
	second.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)

	first.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)

	second.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).ExpectError(t, http.StatusNotFound)
	second.API.Post(t, "/api/v1/contacts/"+contactID+"/tags", acc.Key, map[string]any{"tagNames": []string{"x"}}).ExpectError(t, http.StatusNotFound)
	events := second.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?contactId="+contactID, "").Expect(t, http.StatusOK).List(t, "events")
	if got, _ := json.Marshal(events); strings.Contains(string(got), "Quirinella") || strings.Contains(string(got), "Zorbeck") {
		t.Errorf("the other process's history shows the erased person: %s", got)
	}
	again := second.API.Post(t, "/api/v1/contacts", acc.Key, body).Expect(t, http.StatusOK)
	var res struct {
		Created bool           `json:"created"`
		Contact map[string]any `json:"contact"`
	}
	if err := json.Unmarshal(again.Raw, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Contact["id"] == contactID || res.Contact["lastName"] != "" {
		t.Errorf("the other process's upsert after the erasure: created %v, %v", res.Created, res.Contact)
	}
}

// Writes to a contact racing its erasure either land before it, and are erased with the rest, or
// fail after it (404): none survives it, and none fails with a 500.
func TestWritesRacingAnErasureDoNotSurviveIt(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		svc.NewTag(t, acc.ID, "Racer")
		contactID := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "qzracer@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		var wg sync.WaitGroup
		statuses := make(chan int, 64)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 8 {
					res := svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts/" + contactID + "/tags", Token: acc.Key,
						Body: map[string]any{"tagNames": []string{"Racer"}, "firstName": "Vellichor" + string(rune('a'+w))}})
					statuses <- res.Status
				}
			}()
		}
		svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)
		wg.Wait()
		close(statuses)
		for s := range statuses {
			if s != http.StatusOK && s != http.StatusNotFound {
				t.Errorf("a write racing the erasure answered %d", s)
			}
		}
		svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).ExpectError(t, http.StatusNotFound)
		events := history(t, svc, acc.ID, contactID)
		if got, _ := json.Marshal(events); strings.Contains(string(got), "Vellichor") {
			t.Errorf("a racing write survived the erasure: %s", got)
		}
		if last := events[len(events)-1]["type"]; last != "ContactErased" {
			t.Errorf("an event was recorded after the erasure: %v", last)
		}
	})
}

// A process that keeps nothing of an erased contact (started after the erasure) takes its email
// for a new contact without asking whether it was erased: its first try fails on the erased
// stream's version, and the next one finds the erasure. The upsert creates a new contact, once.
func TestAFreshProcessUpsertsAnErasedEmailAsANewContact(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		url := sqldbtest.URL(t, dialect)
		noLimits := func(c *service.Config) { c.RateLimits = false }
		first := servicetest.StartOn(t, url, noLimits)
		acc := first.NewAccount(t)
		email := "qzfresh.process@example.com"
		erased := first.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email, "firstName": "Quillonia"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		first.API.Delete(t, "/api/v1/contacts/"+erased, acc.Key).Expect(t, http.StatusOK)
		first.Stop()

		fresh := servicetest.StartOn(t, url, noLimits)
		var res struct {
			Created bool           `json:"created"`
			Contact map[string]any `json:"contact"`
		}
		upsert := func() {
			t.Helper()
			raw := fresh.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email}).Expect(t, http.StatusOK).Raw
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
		}
		upsert()
		newID, _ := res.Contact["id"].(string)
		if !res.Created || newID == "" || newID == erased || res.Contact["firstName"] != "" {
			t.Fatalf("the fresh process's upsert of the erased email: created %v, %v", res.Created, res.Contact)
		}
		upsert()
		if res.Created || res.Contact["id"] != newID {
			t.Fatalf("the second upsert: created %v, %v; want the contact %s", res.Created, res.Contact, newID)
		}
		fresh.API.Get(t, "/api/v1/contacts/"+erased, acc.Key).ExpectError(t, http.StatusNotFound)
		if events := history(t, fresh, acc.ID, erased); events[len(events)-1]["type"] != "ContactErased" {
			t.Errorf("an event was recorded on the erased contact after its erasure: %v", events[len(events)-1])
		}
	})
}

// An erased buyer's activation is not completed by another process either, though that process
// still holds the buyer's key from an earlier write, and the completion writes nothing to the
// contact's stream: the same 404 as in the process that erased, and nothing recorded.
func TestAnotherProcessDoesNotCompleteAnErasedBuyersActivation(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	noLimits := func(c *service.Config) { c.RateLimits = false }
	first := servicetest.StartOn(t, url, noLimits)
	second := servicetest.StartOn(t, url, noLimits)
	acc := first.NewAccount(t)
	pro := first.NewProduct(t, acc.ID, map[string]any{"name": "Pro", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
		"pricingTiers": []any{map[string]any{"name": "Once", "amount": 1000, "currency": "EUR", "interval": "one_time"}}})
	const email = "qzother.activation@example.com"
	bought := buy(t, first, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": email})
	contactID := bought.Object(t, "customer")["contactId"].(string)
	token := bought.Object(t, "activation")["token"].(string)
	// The second process seals a value of the buyer's: it keeps the buyer's key.
	second.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email, "firstName": "Qzelda"}).Expect(t, http.StatusOK)

	first.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)

	done := second.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/checkout/activations/" + token + "/complete", Token: acc.Key,
		Headers: map[string]string{"Idempotency-Key": "complete-after-erasure"}, Body: map[string]any{"externalUserId": "qzother-external"}})
	if msg := done.ExpectError(t, http.StatusNotFound); msg != "activation not found: its buyer was erased" {
		t.Errorf("the other process's completion of the erased buyer's activation answers %q", msg)
	}
	var completed int
	if err := second.App.DB().Read.QueryRow(`SELECT COUNT(*) FROM events WHERE account_id = $1 AND type = 'ActivationCompleted'`, acc.ID).Scan(&completed); err != nil {
		t.Fatal(err)
	}
	if completed != 0 {
		t.Errorf("%d completions recorded for the erased buyer", completed)
	}
}

// Two processes on one PostgreSQL database: the second opened a lead for a contact (so it keeps
// the contact's key), the first erases the contact. A new title for the erased contact's lead
// is refused by the second process too (404 "contact not found", as the erasing process
// answers: docs/integration-crm-forms-scheduling.md), and no endpoint nor pg_dump shows it.
func TestAnotherProcessRefusesANewTitleForAnErasedContactsLead(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	noLimits := func(c *service.Config) { c.RateLimits = false }
	first := servicetest.StartOn(t, url, noLimits)
	second := servicetest.StartOn(t, url, noLimits)
	acc := first.NewAccount(t)
	crm := first.NewCRM(t, acc.ID, "Sales", "New")
	const title = "Qzhunt renewal of Qzhuntperson"
	lead := second.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": "qzhunt.lead@example.com", "title": "Qzhunt first"}).
		Expect(t, http.StatusCreated).Object(t, "lead")
	contactID, leadPath := lead["contactId"].(string), "/api/v1/crms/"+crm.ID+"/leads/"+lead["id"].(string)

	first.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)

	res := second.API.Patch(t, leadPath, acc.Key, map[string]any{"title": title})
	if res.Status != http.StatusNotFound {
		t.Errorf("the other process's new title for the erased contact's lead answers %d %s, want 404", res.Status, res.Raw)
	}
	for _, svc := range []*servicetest.Service{first, second} {
		if got := svc.API.Get(t, leadPath, acc.Key).Expect(t, http.StatusOK).Object(t, "lead"); got["title"] != "" {
			t.Errorf("after the erasure the lead reads title %q, want blank", got["title"])
		}
	}
	if found := storageHoldsOf(t, sqldb.Postgres, url, first.App.DB(), []string{title}); len(found) > 0 {
		t.Errorf("after the erasure a pg_dump holds %v", found)
	}
}
