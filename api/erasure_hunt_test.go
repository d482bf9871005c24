package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

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

// New titles for a contact's lead racing the contact's erasure in the same process either land
// before it, and are blanked with the rest, or are refused after it (404): no title written by
// a 200 answered around the erasure is readable afterwards.
func TestLeadTitlesRacingAnErasureDoNotSurviveIt(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		for round := range 6 {
			lead := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": fmt.Sprintf("qzrace.lead%d@example.com", round), "title": "Qzrace first"}).
				Expect(t, http.StatusCreated).Object(t, "lead")
			contactID, leadPath := lead["contactId"].(string), "/api/v1/crms/"+crm.ID+"/leads/"+lead["id"].(string)
			var wg sync.WaitGroup
			statuses := make(chan int, 64)
			start := make(chan struct{})
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := range 10 {
						res := svc.API.Do(t, servicetest.Request{Method: http.MethodPatch, Path: leadPath, Token: acc.Key,
							Body: map[string]any{"title": fmt.Sprintf("Qzracetitle %d-%d-%d", round, w, i)}})
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
					t.Errorf("a new title racing the erasure answered %d", s)
				}
			}
			if got := svc.API.Get(t, leadPath, acc.Key).Expect(t, http.StatusOK).Object(t, "lead"); got["title"] != "" {
				t.Errorf("round %d: after the erasure the lead reads title %q, want blank", round, got["title"])
			}
			events := history(t, svc, acc.ID, contactID)
			for i, e := range events {
				if e["type"] == "ContactErased" && i != len(events)-1 {
					t.Errorf("round %d: %d events recorded after the erasure, the first a %v", round, len(events)-1-i, events[i+1]["type"])
				}
			}
		}
	})
}

// Refunds of a buyer's payment racing the buyer's erasure: a refund recorded after the erasure
// carries the buyer's values null (docs/operator-api.md "Erasure": "the refund's event is
// recorded with the person's values null, and its checkout.refunded shows the person as
// erased"), so no delivery of a refund made after the erasure carries the buyer's email.
func TestRefundsRacingAnErasureCarryNothingOfThePerson(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		type delivered struct {
			ID   string `json:"id"`
			Data struct {
				Customer struct {
					Email *string `json:"email"`
				} `json:"customer"`
				Refund struct {
					RefundedAt time.Time `json:"refundedAt"`
				} `json:"refund"`
			} `json:"data"`
		}
		var mu sync.Mutex
		var got []delivered
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var d delivered
			if err := json.NewDecoder(r.Body).Decode(&d); err == nil && d.Data.Customer.Email != nil && *d.Data.Customer.Email != "" {
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			}
		}))
		defer receiver.Close()
		svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": receiver.URL, "event": "checkout.refunded"}).Expect(t, http.StatusCreated)
		product := svc.NewProduct(t, acc.ID, simpleProduct("Book"))
		db := svc.App.DB()
		erasedAt := map[string]int64{} // the log position of each buyer's ContactErased
		for round := range 5 {
			email := fmt.Sprintf("qzrefund.race%d@example.com", round)
			bought := buy(t, svc, acc.ID, map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": email})
			contactID := bought.Object(t, "customer")["contactId"].(string)
			refund := "/admin/v1/accounts/" + acc.ID + "/checkout/transactions/" + bought.Object(t, "transaction")["id"].(string) + "/refund"
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for range 8 {
						svc.Operator.Post(t, refund, "", map[string]any{"amountCents": 1})
					}
				}()
			}
			close(start)
			time.Sleep(time.Duration(round) * 2 * time.Millisecond)
			svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)
			var at int64
			if err := db.Read.QueryRow(`SELECT position FROM events WHERE stream_id = $1 AND type = 'ContactErased'`, contactID).Scan(&at); err != nil {
				t.Fatal(err)
			}
			erasedAt[email] = at
			wg.Wait()
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var pending int
			if err := db.Read.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE account_id = $1 AND status = 'pending'`, acc.ID).Scan(&pending); err != nil {
				t.Fatal(err)
			}
			if pending == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, d := range got {
			// The log's order decides: the refund's event against its buyer's ContactErased.
			var refundAt int64
			if err := db.Read.QueryRow(`SELECT position FROM events WHERE event_id = $1`, d.ID).Scan(&refundAt); err != nil {
				t.Fatal(err)
			}
			if at, ok := erasedAt[*d.Data.Customer.Email]; ok && refundAt > at {
				t.Errorf("the refund at log position %d, after its buyer's ContactErased at %d, was delivered with the buyer's email %s", refundAt, at, *d.Data.Customer.Email)
			}
		}
		// Nor does the outbox keep a body holding a buyer's email: the erasures blanked those of
		// the deliveries made before them.
		if n := outboxRowsHolding(t, svc, "qzrefund.race"); n > 0 {
			t.Errorf("after the erasures %d webhook deliveries still hold an erased buyer's email in their body", n)
		}
	})
}

// The export (decisions.md "Erasure and export": "every piece of personal data held about the
// contact, from the log") lists every event of the log that holds a personal value of the
// contact, its billing subscription's included, and shows each lead with the title it holds now.
func TestExportListsEveryEventHoldingThePersonsValuesAndLeadsAsTheyAre(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		monthly := svc.NewProduct(t, acc.ID, map[string]any{"name": "Club", "pricingTiers": []any{
			map[string]any{"name": "Monthly", "amount": 500, "currency": "EUR", "interval": "month"}}})
		const email = "qzexport.person@example.com"
		lead := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": email, "title": "Qzexport first title"}).
			Expect(t, http.StatusCreated).Object(t, "lead")
		contactID := lead["contactId"].(string)
		svc.API.Patch(t, "/api/v1/crms/"+crm.ID+"/leads/"+lead["id"].(string), acc.Key, map[string]any{"title": "Qzexport current title"}).Expect(t, http.StatusOK)
		bought := buy(t, svc, acc.ID, map[string]any{"productId": monthly.ID, "pricingTierId": monthly.TierIDs[0], "email": email, "name": "Qzexport Buyer"})
		subscriptionID := bought.Object(t, "subscription")["id"].(string)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/subscriptions/"+subscriptionID+"/rebill", "", map[string]any{}).Expect(t, http.StatusCreated)

		export := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/export", "").Expect(t, http.StatusOK).Object(t, "export")
		exported := map[int64]bool{}
		for _, e := range export["events"].([]any) {
			exported[int64(e.(map[string]any)["position"].(float64))] = true
		}
		rows, err := svc.App.DB().Read.Query(`SELECT position, type FROM events WHERE account_id = $1 AND data LIKE $2 ORDER BY position`,
			acc.ID, `%"$personal":{"contactId":"`+contactID+`"%`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var position int64
			var typ string
			if err := rows.Scan(&position, &typ); err != nil {
				t.Fatal(err)
			}
			if !exported[position] {
				t.Errorf("the export misses the %s at %d, which holds the contact's sealed values", typ, position)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		leads := export["leads"].([]any)
		if len(leads) != 1 || leads[0].(map[string]any)["title"] != "Qzexport current title" {
			t.Errorf("the export's leads are %v, want the one lead with its title now, %q", leads, "Qzexport current title")
		}
	})
}
