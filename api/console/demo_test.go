package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// demo is the data the browser tests look at: the demo account of `funnel serve --demo` (its
// custom field, CRM, tags with their automations, product) with what a day of use adds to it:
// contacts, a purchase of the monthly plan, and a webhook whose receiver failed the purchase.
type demo struct {
	accountID      string
	adaID          string
	graceID        string // a contact with no purchase: erasable
	subscriptionID string
	webhookID      string
	deliveryID     string
	receiver       *flakyReceiver
}

// flakyReceiver answers 500 until told to recover, then 200, counting and keeping what it got.
type flakyReceiver struct {
	server    *httptest.Server
	recovered atomic.Bool
	received  atomic.Int32
	mu        sync.Mutex
	requests  []request
}

// request is one webhook request a receiver got: its envelope's id and its delivery id.
type request struct{ envelopeID, deliveryID string }

// got is what the receiver got so far.
func (r *flakyReceiver) got() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.requests...)
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	r := &flakyReceiver{}
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var envelope struct {
			ID string `json:"id"`
		}
		body, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(body, &envelope)
		r.mu.Lock()
		r.requests = append(r.requests, request{envelopeID: envelope.ID, deliveryID: req.Header.Get("X-Service-Delivery")})
		r.mu.Unlock()
		r.received.Add(1)
		if !r.recovered.Load() {
			http.Error(w, "receiver down for maintenance", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(r.server.Close)
	return r
}

func seedDemo(t *testing.T, svc *servicetest.Service) demo {
	t.Helper()
	op := svc.Operator
	acc := op.Post(t, "/admin/v1/accounts", "", map[string]any{"name": "Demo Account"}).Expect(t, http.StatusCreated).Object(t, "account")["id"].(string)
	base := "/admin/v1/accounts/" + acc
	key := svc.NewKey(t, acc, nil)
	company := svc.NewCustomField(t, acc, "Company")
	crm := svc.NewCRM(t, acc, "Sales", "New", "Qualified", "Won")
	lead := svc.NewTag(t, acc, "Lead",
		map[string]any{"type": "email.send", "subject": "Welcome!", "body": "Thanks for signing up."},
		map[string]any{"type": "crm.move", "crmId": crm.ID, "stageId": crm.Stages[0]})
	customer := svc.NewTag(t, acc, "Customer",
		map[string]any{"type": "campaign.enroll", "campaignId": "onboarding"},
		map[string]any{"type": "crm.move", "crmId": crm.ID, "stageId": crm.Stages[2]})
	newsletter := svc.NewTag(t, acc, "Newsletter")
	product := svc.NewProduct(t, acc, map[string]any{
		"name": "Pro Plan", "internalName": "pro", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
		"pricingTiers": []any{
			map[string]any{"name": "Lifetime", "amount": 49900, "currency": "USD", "interval": "one_time"},
			map[string]any{"name": "Monthly", "amount": 4900, "currency": "USD", "interval": "month"},
		},
		"bumps": []any{map[string]any{"name": "Onboarding call", "amount": 19900}},
	})
	receiver := newFlakyReceiver(t)
	webhook := op.Post(t, base+"/webhooks", "", map[string]any{"url": receiver.server.URL + "/hooks/funnel", "events": []string{"checkout.purchased"}}).
		Expect(t, http.StatusCreated).Object(t, "webhook")["id"].(string)

	contact := func(body map[string]any) string {
		res := svc.API.Post(t, "/api/v1/contacts", key, body)
		if res.Status >= 300 {
			t.Fatalf("upsert contact %v: %d %v", body, res.Status, res.Body)
		}
		return res.Object(t, "contact")["id"].(string)
	}
	ada := contact(map[string]any{"email": "ada@example.com", "firstName": "Ada", "lastName": "Lovelace", "tagIds": []string{lead, newsletter},
		"customFields": map[string]any{company: "Analytical Engines Ltd"}})
	grace := contact(map[string]any{"email": "grace@example.com", "firstName": "Grace", "lastName": "Hopper", "tagIds": []string{newsletter}})
	contact(map[string]any{"email": "alan@example.com", "firstName": "Alan", "lastName": "Turing", "tagIds": []string{lead}})
	contact(map[string]any{"email": "ada@example.com", "phone": "+44 20 7946 0000", "tagIds": []string{customer}})
	bought := op.Post(t, base+"/checkout/purchases", "", map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[1],
		"bumpIds": []string{product.BumpIDs[0]}, "email": "ada@example.com", "name": "Ada Lovelace"}).Expect(t, http.StatusCreated)
	subscription := bought.Object(t, "subscription")["id"].(string)
	op.Post(t, base+"/checkout/subscriptions/"+subscription+"/rebill", "", map[string]any{}).Expect(t, http.StatusCreated)

	// The purchase's delivery has failed once before the browser looks at it.
	deadline := time.Now().Add(15 * time.Second)
	for {
		list := op.Get(t, base+"/webhook-deliveries?webhookId="+webhook, "").Expect(t, http.StatusOK).List(t, "deliveries")
		if len(list) == 1 && len(list[0]["attempts"].([]any)) >= 1 {
			return demo{accountID: acc, adaID: ada, graceID: grace, subscriptionID: subscription, webhookID: webhook, deliveryID: list[0]["id"].(string), receiver: receiver}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the purchase's delivery was not attempted: %v", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
