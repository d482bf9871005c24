package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// personal are the distinctive values the erasure test writes about one person, through every
// surface that takes personal data: nothing else in any database holds them.
var personal = []string{
	"qzerasure.ada@example.com", "Qzadaline", "Vexworth", "+1 555 867 5309", "Xylocarp-42",
	"Plumbago-Quasar", "Tamarind-Nebula",
}

// storageHolds returns the personal values a copy of the storage holds (storageHoldsOf).
func storageHolds(t *testing.T, dialect sqldb.Dialect, databaseURL string, db *sqldb.DB) []string {
	t.Helper()
	return storageHoldsOf(t, dialect, databaseURL, db, personal)
}

// storageHoldsOf returns which of values a copy of the storage holds, in any spelling the service
// could have stored them: as written, lower-cased, or JSON-escaped. On SQLite the copy is the
// database file and its WAL as they are on disk, free pages and old frames included; on
// PostgreSQL a pg_dump.
func storageHoldsOf(t *testing.T, dialect sqldb.Dialect, databaseURL string, db *sqldb.DB, values []string) []string {
	t.Helper()
	var raw []byte
	if dialect == sqldb.SQLite {
		for _, f := range []string{db.Path(), db.Path() + "-wal"} {
			b, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			raw = append(raw, b...)
		}
	} else {
		u, err := url.Parse(databaseURL)
		if err != nil {
			t.Fatal(err)
		}
		u.RawQuery = "" // pg_dump knows none of the pool's settings
		out, err := exec.Command("pg_dump", "--no-owner", u.String()).CombinedOutput()
		if err != nil {
			t.Fatalf("pg_dump: %v\n%s", err, out)
		}
		raw = out
	}
	lower := bytes.ToLower(raw)
	var found []string
	for _, v := range values {
		escaped, _ := json.Marshal(v)
		if bytes.Contains(raw, []byte(v)) || bytes.Contains(lower, []byte(strings.ToLower(v))) ||
			bytes.Contains(raw, bytes.Trim(escaped, `"`)) {
			found = append(found, v)
		}
	}
	return found
}

// An erased contact leaves nothing readable: no endpoint shows it, and neither the SQLite file
// and its WAL nor a pg_dump hold any of its values, while its history keeps every event with
// its values null, a rebuild brings nothing back, and the same email later is a new contact.
func TestErasureLeavesNothingOfThePersonInTheStorage(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		databaseURL := sqldbtest.URL(t, dialect)
		svc := servicetest.StartOn(t, databaseURL, func(c *service.Config) { c.WebhookBackoffBase = time.Hour; c.WebhookBackoffCap = time.Hour })
		db := svc.App.DB()
		acc := svc.NewAccount(t)
		fieldID := svc.NewCustomField(t, acc.ID, "Fruit")
		formID, ff := svc.NewForm(t, acc.ID, "Signup", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Plant", "type": "text"})
		eventTypeID, q := svc.NewEventType(t, acc.ID, "Call", 30,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Spice", "type": "text"})
		product := svc.NewProduct(t, acc.ID, simpleProduct("Book"))

		// A receiver that fails: the form's delivery stays pending, retried in an hour.
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
		defer failing.Close()
		svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": failing.URL, "event": "form.submitted"}).Expect(t, http.StatusCreated)

		email := personal[0]
		upsert := servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key, Headers: map[string]string{"Idempotency-Key": "erasure-1"},
			Body: map[string]any{
				"email": email, "firstName": "Qzadaline", "lastName": "Vexworth", "phone": "+1 555 867 5309",
				"customFields": map[string]any{fieldID: "Xylocarp-42"},
			}}
		created := svc.API.Do(t, upsert).Expect(t, http.StatusOK).Object(t, "contact")
		contactID := created["id"].(string)
		svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{ff[0]: email, ff[1]: "Plumbago-Quasar"}}).Expect(t, http.StatusCreated)
		svc.API.Post(t, "/api/v1/scheduling/"+eventTypeID+"/bookings", acc.Key, map[string]any{"startTime": futureSlot(3), "answers": map[string]any{q[0]: email, q[1]: "Tamarind-Nebula"}}).
			Expect(t, http.StatusCreated)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{
			"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": email, "name": "Qzadaline Vexworth",
		}).Expect(t, http.StatusCreated)
		other := svc.NewAccount(t)
		before := history(t, svc, acc.ID, contactID)
		if got, _ := json.Marshal(before); !strings.Contains(string(got), "Plumbago-Quasar") {
			t.Fatalf("the history before the erasure misses the form answer: %s", got)
		}
		waitForDelivery(t, db, acc.ID, "pending")
		// The export holds every value written about the person, each in its place.
		exported := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/export", "").Expect(t, http.StatusOK)
		for _, v := range personal {
			if !strings.Contains(string(exported.Raw), strings.ReplaceAll(v, "+", `\u002b`)) && !strings.Contains(string(exported.Raw), v) {
				t.Errorf("the export misses %q: %s", v, exported.Raw)
			}
		}
		export := exported.Object(t, "export")
		// The events are the history's and the buyer's customer's creation (its own stream).
		for member, want := range map[string]int{"events": len(before) + 1, "submissions": 1, "bookings": 1, "customers": 1, "transactions": 1} {
			if got := len(export[member].([]any)); got != want {
				t.Errorf("the export has %d %s, want %d", got, member, want)
			}
		}
		svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/contacts/"+contactID+"/export", "").ExpectError(t, http.StatusForbidden)
		// The scan finds what the read models hold before the erasure: it can see the values.
		if found := storageHolds(t, dialect, databaseURL, db); len(found) != len(personal) {
			t.Fatalf("before the erasure the storage scan finds %v of %v", found, personal)
		}

		// Another account cannot erase it; a key without contacts:erase may not.
		svc.API.Delete(t, "/api/v1/contacts/"+contactID, other.Key).ExpectError(t, http.StatusForbidden)
		writer := svc.NewKey(t, acc.ID, []string{"contacts:write", "contacts:read"})
		svc.API.Delete(t, "/api/v1/contacts/"+contactID, writer).ExpectError(t, http.StatusForbidden)

		erasure := svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK).Object(t, "erasure")
		if erasure["contactId"] != contactID || erasure["erasedAt"] == "" {
			t.Fatalf("erasure = %v", erasure)
		}
		svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).ExpectError(t, http.StatusNotFound)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/erase", "", nil).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).ExpectError(t, http.StatusNotFound)
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/export", "").ExpectError(t, http.StatusNotFound)
		// The answer kept for the Idempotency-Key showed the person: a retry is told it is gone.
		if msg := svc.API.Do(t, upsert).ExpectError(t, http.StatusNotFound); msg != "contact not found" {
			t.Errorf("a retry of the keyed upsert after the erasure answers %q", msg)
		}
		if list := svc.API.Get(t, "/api/v1/contacts?email="+url.QueryEscape(email), acc.Key).List(t, "contacts"); len(list) != 0 {
			t.Errorf("the contact list still finds the erased contact: %v", list)
		}
		var status, lastError, body string
		if err := db.Read.QueryRowContext(ctx, `SELECT status, last_error, body FROM webhook_deliveries WHERE account_id = $1`, acc.ID).Scan(&status, &lastError, &body); err != nil {
			t.Fatal(err)
		}
		if status != "failed" || lastError != "erased" || body != "" {
			t.Errorf("the pending delivery of the erased contact is %s (%q) with body %q, want failed, erased, empty", status, lastError, body)
		}

		after := history(t, svc, acc.ID, contactID)
		if len(after) != len(before)+1 || after[len(after)-1]["type"] != "ContactErased" {
			t.Fatalf("the history after the erasure has %d events (last %v), want the %d before and ContactErased", len(after), after[len(after)-1]["type"], len(before))
		}
		for i, e := range before {
			if after[i]["position"] != e["position"] || after[i]["type"] != e["type"] || after[i]["occurredAt"] != e["occurredAt"] {
				t.Errorf("event %d changed: %v, was %v", i, after[i], e)
			}
		}
		if got, _ := json.Marshal(after); bytes.Contains(bytes.ToLower(got), []byte("qzadaline")) || bytes.Contains(got, []byte("Plumbago")) {
			t.Errorf("the history still shows the person: %s", got)
		}
		if data := after[0]["data"].(map[string]any); data["email"] != nil || data["contactId"] != contactID {
			t.Errorf("the erased ContactCreated reads %v, want email null", data)
		}
		// The purchase too, though the history shows it encoded anew (its activation token
		// redacted): an erased value is null there, not "".
		purchases := 0
		for _, e := range after {
			if e["type"] != "CheckoutPurchased" {
				continue
			}
			purchases++
			data := e["data"].(map[string]any)
			customer, contact := data["customer"].(map[string]any), data["contact"].(map[string]any)
			if customer["email"] != nil || customer["name"] != nil || contact["email"] != nil || contact["firstName"] != nil {
				t.Errorf("the erased purchase reads customer %v, contact %v, want their values null", customer, contact)
			}
		}
		if purchases == 0 {
			t.Error("the history shows no purchase")
		}

		if found := storageHolds(t, dialect, databaseURL, db); len(found) > 0 {
			t.Errorf("after the erasure the storage still holds %v", found)
		}

		// Rebuilding every read model from the log brings nothing back.
		for _, name := range []string{"contacts", "form-submissions", "bookings", "customers", "activations", "transactions"} {
			if _, err := service.Rebuild(ctx, db, svc.App.SecretKey(), name, nil); err != nil {
				t.Fatalf("rebuild %s: %v", name, err)
			}
		}
		svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).ExpectError(t, http.StatusNotFound)
		if err := db.ScrubErased(ctx); err != nil {
			t.Fatal(err)
		}
		if found := storageHolds(t, dialect, databaseURL, db); len(found) > 0 {
			t.Errorf("after rebuilds the storage holds %v again", found)
		}

		// The same email later is a new contact, with nothing of the old one's.
		again := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email})
		again.Expect(t, http.StatusOK)
		var res struct {
			Created bool           `json:"created"`
			Contact map[string]any `json:"contact"`
		}
		if err := json.Unmarshal(again.Raw, &res); err != nil {
			t.Fatal(err)
		}
		if !res.Created || res.Contact["id"] == contactID || res.Contact["firstName"] != "" || len(res.Contact["customFields"].(map[string]any)) != 0 {
			t.Errorf("the email's upsert after the erasure: created %v, %v", res.Created, res.Contact)
		}
	})
}

// A contact that pays an active subscription is not erased (409, nothing erased) until the
// subscription is cancelled.
func TestErasureWaitsForActiveSubscriptions(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		product := svc.NewProduct(t, acc.ID, map[string]any{"name": "Club",
			"pricingTiers": []any{map[string]any{"name": "Monthly", "amount": 900, "currency": "EUR", "interval": "month"}}})
		bought := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{
			"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "member@example.com"}).Expect(t, http.StatusCreated)
		contactID := bought.Object(t, "customer")["contactId"].(string)
		subscriptionID := bought.Object(t, "subscription")["id"].(string)
		msg := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/erase", "", nil).ExpectError(t, http.StatusConflict)
		if !strings.Contains(msg, "active subscription") {
			t.Errorf("409 says %q", msg)
		}
		svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/subscriptions/"+subscriptionID+"/cancel", "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/erase", "", nil).Expect(t, http.StatusOK)
		svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).ExpectError(t, http.StatusNotFound)
	})
}

// The erasure decides on the log, not on the subscriptions read model, which is relayed and may
// not show a purchase committed just before (a slow worker, a takeover between processes): here
// the read model has lost the subscription's row altogether, and the erasure still refuses.
func TestErasureRefusesASubscriptionTheReadModelDoesNotShowYet(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		product := svc.NewProduct(t, acc.ID, map[string]any{"name": "Club",
			"pricingTiers": []any{map[string]any{"name": "Monthly", "amount": 900, "currency": "EUR", "interval": "month"}}})
		bought := svc.Operator.Post(t, admin+"/checkout/purchases", "", map[string]any{
			"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "lagging@example.com"}).Expect(t, http.StatusCreated)
		contactID := bought.Object(t, "customer")["contactId"].(string)
		subscriptionID := bought.Object(t, "subscription")["id"].(string)
		if _, err := svc.App.DB().Write.Exec(`DELETE FROM subscriptions WHERE id = $1`, subscriptionID); err != nil {
			t.Fatal(err)
		}
		refused := svc.Operator.Post(t, admin+"/contacts/"+contactID+"/erase", "", nil)
		refused.ExpectError(t, http.StatusConflict)
		if refused.Body["code"] != "subscription_active" {
			t.Errorf("code %v, want subscription_active", refused.Body["code"])
		}
		svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)
	})
}

// waitForDelivery waits until the account's one delivery has a status.
func waitForDelivery(t *testing.T, db *sqldb.DB, accountID, status string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got string
		var attempts int
		err := db.Read.QueryRow(`SELECT status, attempts FROM webhook_deliveries WHERE account_id = $1`, accountID).Scan(&got, &attempts)
		if err == nil && got == status && attempts > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery is %q after %d attempts (%v), want %s after one", got, attempts, err, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A contact recorded before personal values were sealed (its events hold them in the clear, as
// main wrote them) is erased the same way: the erasure nulls them in the log itself.
func TestErasureOfAContactRecordedInTheClear(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		databaseURL := sqldbtest.URL(t, dialect)
		first := servicetest.StartOn(t, databaseURL, func(*service.Config) {})
		acc := first.NewAccount(t)
		first.Stop()

		// The events as a build without sealing appended them.
		db, err := sqldb.Open(ctx, databaseURL)
		if err != nil {
			t.Fatal(err)
		}
		email := personal[0]
		contactID, customerID := domain.ContactIDFor(acc.ID, email), domain.CustomerIDFor(acc.ID, email)
		plain := eventstore.New(db)
		plain.SetInline(service.InlineProjections(db)...)
		meta := domain.Metadata{AccountID: acc.ID, Actor: "operator"}
		if _, err := plain.Append(ctx, meta,
			domain.StreamAppend{StreamID: contactID, Events: []domain.Event{domain.ContactCreated{ContactID: contactID, AccountID: acc.ID, Email: email,
				FirstName: "Qzadaline", LastName: "Vexworth", Phone: "+1 555 867 5309", CustomFields: map[string]string{"fld_x": "Xylocarp-42"}}}},
			domain.StreamAppend{StreamID: customerID, Events: []domain.Event{
				domain.CustomerCreated{CustomerID: customerID, AccountID: acc.ID, Email: email, Name: "Plumbago-Quasar", ContactID: contactID},
				domain.CustomerRenamed{CustomerID: customerID, Name: "Tamarind-Nebula"}}},
		); err != nil {
			t.Fatal(err)
		}
		plain.Close()
		db.Close()

		svc := servicetest.StartOn(t, databaseURL, func(*service.Config) {})
		if got := svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK).Object(t, "contact"); got["firstName"] != "Qzadaline" {
			t.Fatalf("the contact recorded in the clear reads %v", got)
		}
		if found := storageHolds(t, dialect, databaseURL, svc.App.DB()); len(found) != len(personal) {
			t.Fatalf("before the erasure the storage scan finds %v of %v", found, personal)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/erase", "", nil).Expect(t, http.StatusOK)
		if found := storageHolds(t, dialect, databaseURL, svc.App.DB()); len(found) > 0 {
			t.Errorf("after the erasure the storage still holds %v", found)
		}
		events := history(t, svc, acc.ID, contactID)
		if len(events) != 2 || events[0]["type"] != "ContactCreated" || events[1]["type"] != "ContactErased" {
			t.Fatalf("history = %v", events)
		}
		if data := events[0]["data"].(map[string]any); data["email"] != nil || data["contactId"] != contactID || data["accountId"] != acc.ID {
			t.Errorf("the erased creation reads %v", data)
		}
	})
}

// A form answered without an email names no contact: nobody the service knows, so nobody an
// erasure can be asked for (decisions.md "Erasure" erases one contact). Its answers are stored
// as they are, not sealed (architecture.md, "Erasure": "Which values"), and no erasure touches
// them; the same form answered with an email is sealed under that contact's key and erased with
// it.
func TestFormAnsweredWithoutAnEmailIsStoredAsItIs(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		db := svc.App.DB()
		acc := svc.NewAccount(t)
		formID, ff := svc.NewForm(t, acc.ID, "Feedback", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Name", "type": "text", "contactField": "builtin:firstName"},
			servicetest.Field{"label": "Comment", "type": "text"})
		anonymous := svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{ff[1]: "Qzanon-Name", ff[2]: "Qzanon-Comment"}}).
			Expect(t, http.StatusCreated).Object(t, "submission")
		if anonymous["contactId"] != nil && anonymous["contactId"] != "" {
			t.Fatalf("a submission without an email names contact %v", anonymous["contactId"])
		}
		known := svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{ff[0]: "qzknown@example.com", ff[1]: "Qzknown-Name", ff[2]: "Qzknown-Comment"}}).
			Expect(t, http.StatusCreated).Object(t, "submission")
		contactID, _ := known["contactId"].(string)
		if contactID == "" {
			t.Fatalf("a submission with an email names no contact: %v", known)
		}

		stored := func(submissionID string) string {
			t.Helper()
			var data string
			if err := db.Read.QueryRowContext(ctx, `SELECT data FROM events WHERE stream_id = $1 AND type = 'FormSubmitted'`, submissionID).Scan(&data); err != nil {
				t.Fatal(err)
			}
			return data
		}
		if data := stored(anonymous["id"].(string)); !strings.Contains(data, "Qzanon-Comment") || strings.Contains(data, `"$personal"`) {
			t.Errorf("the submission without an email is stored as %s, want its answers as they are", data)
		}
		if data := stored(known["id"].(string)); strings.Contains(data, "Qzknown") || !strings.Contains(data, `"$personal"`) {
			t.Errorf("the submission with an email is stored as %s, want its answers sealed", data)
		}

		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/erase", "", nil).Expect(t, http.StatusOK)
		listed := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/forms/"+formID+"/submissions", "").Expect(t, http.StatusOK)
		if !strings.Contains(string(listed.Raw), "Qzanon-Comment") || strings.Contains(string(listed.Raw), "Qzknown") {
			t.Errorf("after the erasure of the known contact the form's submissions are %s", listed.Raw)
		}
	})
}

// A form submitted with the email of an erased contact is a new contact's, as an upsert is, even
// though the submission takes the email's contact for new without asking for erasures first:
// the erased contact's stream refuses the append, and the next attempt steps over it. Asked of a
// process that has never seen the contact too (restarted: it keeps nothing of it).
func TestFormSubmittedAfterAnErasureIsANewContacts(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		databaseURL := sqldbtest.URL(t, dialect)
		svc := servicetest.StartOn(t, databaseURL, func(*service.Config) {})
		acc := svc.NewAccount(t)
		formID, ff := svc.NewForm(t, acc.ID, "Signup", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Name", "type": "text", "contactField": "builtin:firstName"})
		submit := func(svc *servicetest.Service, email, name string) string {
			t.Helper()
			got := svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{ff[0]: email, ff[1]: name}}).
				Expect(t, http.StatusCreated).Object(t, "submission")
			id, _ := got["contactId"].(string)
			if id == "" {
				t.Fatalf("the submission of %s names no contact: %v", email, got)
			}
			return id
		}
		first := submit(svc, "qzform@example.com", "Qzfirst")
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+first+"/erase", "", nil).Expect(t, http.StatusOK)

		second := submit(svc, "qzform@example.com", "Qzsecond")
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+second+"/erase", "", nil).Expect(t, http.StatusOK)
		svc.Stop()
		restarted := servicetest.StartOn(t, databaseURL, func(*service.Config) {})
		third := submit(restarted, "qzform@example.com", "Qzthird")
		if first == second || second == third || first == third {
			t.Fatalf("the submissions after each erasure name contacts %s, %s, %s: want three", first, second, third)
		}
		for _, erased := range []string{first, second} {
			restarted.API.Get(t, "/api/v1/contacts/"+erased, acc.Key).ExpectError(t, http.StatusNotFound)
		}
		contact := restarted.API.Get(t, "/api/v1/contacts/"+third, acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
		if contact["email"] != "qzform@example.com" || contact["firstName"] != "Qzthird" {
			t.Errorf("the contact of the last submission is %v", contact)
		}
	})
}

// An erasure whose ContactErased was recorded by a process that died before it finished (no
// kept answer rewritten, no answer given): the kept answer of a keyed upsert that showed the
// person is replayed as a 404 all the same, and asking for the erasure again answers 404 after
// finishing it. TestErasureSurvivesACrash (cmd/funnel) does the same with a real kill -9.
func TestAnErasureCutShortAfterItsRecordShowsNothing(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		upsert := servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key, Headers: map[string]string{"Idempotency-Key": "cut-short-1"},
			Body: map[string]any{"email": "qzcutshort@example.com", "firstName": "Qzcutshort"}}
		contactID := svc.API.Do(t, upsert).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)

		recordErasureOnly(t, svc, acc.ID, contactID)
		replay := svc.API.Do(t, upsert)
		if msg := replay.ExpectError(t, http.StatusNotFound); msg != "contact not found" || strings.Contains(string(replay.Raw), "Qzcutshort") {
			t.Errorf("the kept answer of the erased contact's upsert replays as %s", replay.Raw)
		}
		svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Do(t, upsert).ExpectError(t, http.StatusNotFound)
	})
}

// A keyed upsert performed, whose answer was never kept (the process stopped between its write
// and its answer: the key holds the command's outcome, to answer a retry from), then its contact
// erased by an erasure cut short before it rewrote the kept answers. The retry rebuilds no answer
// from the outcome: it is a 404 that shows nothing of the person, and so is every retry after it.
func TestAnAnswerRebuiltAfterAnErasureShowsNothing(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		db := svc.App.DB()
		acc := svc.NewAccount(t)
		// The answer is never kept: the row's move to "done" fails, and the outcome is kept in
		// its place, as when the process stops during a late answer (httpapi's keepOutcomesAfter).
		for _, q := range map[sqldb.Dialect][]string{
			sqldb.SQLite: {`CREATE TRIGGER unanswered BEFORE UPDATE ON idempotency_keys WHEN NEW.state = 'done' BEGIN SELECT RAISE(ABORT, 'unanswered'); END`},
			sqldb.Postgres: {`CREATE FUNCTION unanswered() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'unanswered'; END $$`,
				`CREATE TRIGGER unanswered BEFORE UPDATE ON idempotency_keys FOR EACH ROW WHEN (NEW.state = 'done') EXECUTE FUNCTION unanswered()`},
		}[db.Dialect] {
			if _, err := db.Write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		upsert := servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key, Headers: map[string]string{"Idempotency-Key": "rebuilt-1"},
			Body: map[string]any{"email": "qzrebuilt@example.com", "firstName": "Qzrebuilt"}}
		contactID := svc.API.Do(t, upsert).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		for _, q := range map[sqldb.Dialect][]string{
			sqldb.SQLite:   {`DROP TRIGGER unanswered`},
			sqldb.Postgres: {`DROP TRIGGER unanswered ON idempotency_keys`, `DROP FUNCTION unanswered()`},
		}[db.Dialect] {
			if _, err := db.Write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		// The stopped attempt's lease has run out.
		var state string
		if err := db.Write.QueryRowContext(ctx, `UPDATE idempotency_keys SET lease_until = 0 WHERE scope = $1 RETURNING state`, "account:"+acc.ID).Scan(&state); err != nil || state != "performed" {
			t.Fatalf("the key is %q (%v), want performed: kept outcome, no answer", state, err)
		}
		// The erasure, cut short after its record (TestAnErasureCutShortAfterItsRecordShowsNothing).
		pos, err := svc.App.Store().Append(ctx, domain.Metadata{AccountID: acc.ID, Actor: string(domain.OperatorActor)},
			domain.StreamAppend{StreamID: contactID, ExpectedVersion: domain.AnyVersion, Events: []domain.Event{
				domain.ContactErased{ContactID: contactID, AccountID: acc.ID, ErasedAt: time.Now().UTC()}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			replay := svc.API.Do(t, upsert)
			if msg := replay.ExpectError(t, http.StatusNotFound); msg != "contact not found" || strings.Contains(string(replay.Raw), "Qzrebuilt") || strings.Contains(string(replay.Raw), "qzrebuilt") {
				t.Fatalf("the retry of the erased contact's upsert answers %s", replay.Raw)
			}
		}
		// The 404 is kept in place of the outcome, which named the person.
		var outcome string
		if err := db.Read.QueryRowContext(ctx, `SELECT state, outcome FROM idempotency_keys WHERE scope = $1`, "account:"+acc.ID).Scan(&state, &outcome); err != nil || state != "done" || outcome != "" {
			t.Errorf("after the retry the key is %q with outcome %q (%v), want done with none", state, outcome, err)
		}
	})
}

// A retry of an erasure with its Idempotency-Key gets the erasure's answer again, as any keyed
// request does: the erasure rewrites the kept answers that name the contact, but not its own,
// which shows nothing of the person (its id and a time). A keyed upsert of the contact made
// before is told it is gone.
func TestAKeyedErasureRetriedGetsItsAnswer(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		upsert := servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key, Headers: map[string]string{"Idempotency-Key": "before-1"},
			Body: map[string]any{"email": "qzkeyed@example.com", "firstName": "Qzkeyed"}}
		contactID := svc.API.Do(t, upsert).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		erase := servicetest.Request{Method: http.MethodPost, Path: "/admin/v1/accounts/" + acc.ID + "/contacts/" + contactID + "/erase",
			Headers: map[string]string{"Idempotency-Key": "erase-1"}}
		first := svc.Operator.Do(t, erase).Expect(t, http.StatusOK)
		again := svc.Operator.Do(t, erase).Expect(t, http.StatusOK)
		if string(again.Raw) != string(first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the erasure's retry answers %s (replayed %q), want its answer %s again", again.Raw, again.Header.Get("Idempotent-Replayed"), first.Raw)
		}
		if replay := svc.API.Do(t, upsert); replay.ExpectError(t, http.StatusNotFound) != "contact not found" || strings.Contains(string(replay.Raw), "Qzkeyed") {
			t.Errorf("the upsert's retry answers %s", replay.Raw)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/erase", "", nil).ExpectError(t, http.StatusNotFound)
	})
}

// The kept answer of a keyed completion of an activation shows the buyer's email and
// externalUserId, and names no contact, only the activation and its customer (its kept outcome,
// only the activation). The erasure reaches it all the same, through the contact's customers and
// activations (idempotency.ContactStreams): a retry with the same key is told the contact is
// gone. So is the retry of one whose erasure was cut short after its record (no kept answer
// rewritten), which is checked at replay.
func TestAKeptActivationAnswerShowsNothingAfterAnErasure(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, map[string]any{"name": "Pro", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
			"pricingTiers": []any{map[string]any{"name": "Once", "amount": 1000, "currency": "EUR", "interval": "one_time"}}})
		complete := func(email, external string) (string, servicetest.Request) {
			bought := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": email})
			token := bought.Object(t, "activation")["token"].(string)
			req := servicetest.Request{Method: http.MethodPost, Path: "/api/v1/checkout/activations/" + token + "/complete", Token: acc.Key,
				Headers: map[string]string{"Idempotency-Key": "complete-" + external}, Body: map[string]any{"externalUserId": external}}
			done := svc.API.Do(t, req).Expect(t, http.StatusOK)
			if a := done.Object(t, "activation"); a["email"] != email || a["externalUserId"] != external {
				t.Fatalf("the completion answers %s", done.Raw)
			}
			return bought.Object(t, "customer")["contactId"].(string), req
		}
		showsNothing := func(req servicetest.Request, values ...string) {
			t.Helper()
			replay := svc.API.Do(t, req)
			if msg := replay.ExpectError(t, http.StatusNotFound); msg != "contact not found" {
				t.Errorf("after the erasure the keyed retry of the activation's completion answers %q", msg)
			}
			for _, v := range values {
				if strings.Contains(string(replay.Raw), v) {
					t.Errorf("after the erasure the keyed retry of the activation's completion shows %q: %s", v, replay.Raw)
				}
			}
		}

		const email, external = "qzkeptactivation@example.com", "qzkept-external-user"
		contactID, req := complete(email, external)
		svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)
		showsNothing(req, email, external)

		// The erasure, cut short after its record (TestAnErasureCutShortAfterItsRecordShowsNothing).
		const cutEmail, cutExternal = "qzcutactivation@example.com", "qzcut-external-user"
		cutID, cutReq := complete(cutEmail, cutExternal)
		recordErasureOnly(t, svc, acc.ID, cutID)
		showsNothing(cutReq, cutEmail, cutExternal)
	})
}

// No keyed write of a person shows anything of the person when retried after its erasure,
// whichever id its answer names: an upsert, a form submission, a booking, a lead, a purchase, a
// refund, an activation's completion. One whose answer showed the person's values is told the
// contact is gone (a refund's shows only the transaction, a financial record, and is replayed).
func TestKeptAnswersOfEveryKeyedWriteShowNothingAfterAnErasure(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		formID, ff := svc.NewForm(t, acc.ID, "Signup", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Plant", "type": "text"})
		eventTypeID, q := svc.NewEventType(t, acc.ID, "Call", 30,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Spice", "type": "text"})
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		pro := svc.NewProduct(t, acc.ID, map[string]any{"name": "Pro", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
			"pricingTiers": []any{map[string]any{"name": "Once", "amount": 1000, "currency": "EUR", "interval": "one_time"}}})
		const email, name, plant, spice, external = "qzeverykeyed@example.com", "Qzevery Keyed", "Qzplant-Keyed", "Qzspice-Keyed", "qzevery-external"
		values := []string{email, "Qzevery", plant, spice, external}

		shows := func(raw []byte) bool {
			for _, v := range append(values, name) {
				if strings.Contains(string(raw), v) {
					return true
				}
			}
			return false
		}
		type write struct {
			client *servicetest.Client
			req    servicetest.Request
			showed bool
		}
		var writes []write
		do := func(client *servicetest.Client, path string, body map[string]any) servicetest.Response {
			t.Helper()
			req := servicetest.Request{Method: http.MethodPost, Path: path, Headers: map[string]string{"Idempotency-Key": "every-" + path}, Body: body}
			if client == svc.API {
				req.Token = acc.Key
			}
			res := client.Do(t, req)
			if res.Status/100 != 2 {
				t.Fatalf("POST %s answers %d %s", path, res.Status, res.Raw)
			}
			writes = append(writes, write{client, req, shows(res.Raw)})
			return res
		}
		contactID := do(svc.API, "/api/v1/contacts", map[string]any{"email": email, "firstName": "Qzevery"}).Object(t, "contact")["id"].(string)
		do(svc.API, "/api/v1/forms/"+formID+"/submissions", map[string]any{"values": map[string]any{ff[0]: email, ff[1]: plant}})
		do(svc.API, "/api/v1/scheduling/"+eventTypeID+"/bookings", map[string]any{"startTime": futureSlot(5), "answers": map[string]any{q[0]: email, q[1]: spice}})
		do(svc.API, "/api/v1/crms/"+crm.ID+"/leads", map[string]any{"contactEmail": email, "stageId": crm.Stages[0], "title": "Qzlead"})
		bought := do(svc.Operator, admin+"/checkout/purchases", map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": email, "name": name})
		do(svc.Operator, admin+"/checkout/transactions/"+bought.Object(t, "transaction")["id"].(string)+"/refund", map[string]any{})
		do(svc.API, "/api/v1/checkout/activations/"+bought.Object(t, "activation")["token"].(string)+"/complete", map[string]any{"externalUserId": external})

		svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)

		for _, w := range writes {
			if replay := w.client.Do(t, w.req); shows(replay.Raw) || w.showed && replay.Status != http.StatusNotFound {
				t.Errorf("after the erasure the keyed retry of POST %s answers %d %s, want 404 contact not found", w.req.Path, replay.Status, replay.Raw)
			}
		}
	})
}

// The operator's history by email shows the email's current contact, as commands find it: never
// an erased one (decisions.md "Erasure": lists and filters don't find it). While the email's only
// contact is erased, the email is answered as an unknown one (404), the erased contact's history
// still read by its id; once the email has a new contact, its history is the new one's.
func TestHistoryByEmailStepsOverErasedContacts(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		byEmail := func(email string) servicetest.Response {
			return svc.Operator.Get(t, admin+"/history?email="+url.QueryEscape(email), "")
		}
		const email = "qzhistorybyemail@example.com"
		erased := upsert(t, svc, acc.Key, map[string]any{"email": email, "firstName": "Qzold"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		if events := byEmail(email).Expect(t, http.StatusOK).List(t, "events"); len(events) == 0 || events[0]["streamId"] != erased {
			t.Fatalf("history?email= before the erasure lists %v, want the contact %s", events, erased)
		}
		svc.API.Delete(t, "/api/v1/contacts/"+erased, acc.Key).Expect(t, http.StatusOK)

		unknown := byEmail("qzhistory-nobody@example.com").ExpectError(t, http.StatusNotFound)
		if msg := byEmail(email).ExpectError(t, http.StatusNotFound); msg != unknown {
			t.Errorf("history?email= of an email whose contact is erased answers %q, want the 404 of an unknown email (%q)", msg, unknown)
		}
		if events := history(t, svc, acc.ID, erased); len(events) == 0 || events[len(events)-1]["type"] != "ContactErased" {
			t.Errorf("the erased contact's history by id lists %v", events)
		}

		again := upsert(t, svc, acc.Key, map[string]any{"email": email, "firstName": "Qznew"}).Expect(t, http.StatusOK)
		current := again.Object(t, "contact")["id"].(string)
		if again.Body["created"] != true || current == erased {
			t.Fatalf("the email's upsert after the erasure: %s", again.Raw)
		}
		events := byEmail(email).Expect(t, http.StatusOK).List(t, "events")
		for _, e := range events {
			if e["streamId"] != current {
				t.Errorf("history?email= lists an event of stream %v, want only the email's current contact %s (not the erased %s)", e["streamId"], current, erased)
			}
		}
		if len(events) == 0 {
			t.Errorf("history?email= lists nothing, want the current contact %s", current)
		}
	})
}

// The export (decisions.md "Erasure and export": "every piece of personal data held about the
// contact, from the log") lists every event of the log that holds a personal value of the
// contact, its billing subscription's start and renewals included, and shows each lead with the
// title and stage it has now, and each payment with its status now, as the lead and customer
// endpoints do.
func TestExportListsEveryEventHoldingThePersonsValuesAndLeadsAsTheyAre(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		monthly := svc.NewProduct(t, acc.ID, map[string]any{"name": "Club", "pricingTiers": []any{
			map[string]any{"name": "Monthly", "amount": 500, "currency": "EUR", "interval": "month"}}})
		const email = "qzexport.person@example.com"
		lead := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": email, "title": "Qzexport first title"}).
			Expect(t, http.StatusCreated).Object(t, "lead")
		contactID := lead["contactId"].(string)
		svc.API.Patch(t, "/api/v1/crms/"+crm.ID+"/leads/"+lead["id"].(string), acc.Key, map[string]any{"title": "Qzexport current title"}).Expect(t, http.StatusOK)
		svc.API.Patch(t, "/api/v1/crms/"+crm.ID+"/leads/"+lead["id"].(string), acc.Key, map[string]any{"stageId": crm.Stages[1]}).Expect(t, http.StatusOK)
		bought := buy(t, svc, acc.ID, map[string]any{"productId": monthly.ID, "pricingTierId": monthly.TierIDs[0], "email": email, "name": "Qzexport Buyer"})
		subscriptionID := bought.Object(t, "subscription")["id"].(string)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/subscriptions/"+subscriptionID+"/rebill", "", map[string]any{}).Expect(t, http.StatusCreated)
		paid := bought.Object(t, "transaction")["id"].(string)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/transactions/"+paid+"/refund", "", map[string]any{"amountCents": 1}).Expect(t, http.StatusOK)

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
		if len(leads) != 1 || leads[0].(map[string]any)["title"] != "Qzexport current title" || leads[0].(map[string]any)["stageId"] != crm.Stages[1] {
			t.Errorf("the export's leads are %v, want the one lead with its title now, %q, at its stage now, %s", leads, "Qzexport current title", crm.Stages[1])
		}
		for _, x := range export["transactions"].([]any) {
			if txn := x.(map[string]any); txn["id"] == paid && txn["status"] != "partially_refunded" {
				t.Errorf("the export shows the payment refunded in part as %v, want partially_refunded", txn["status"])
			}
		}
	})
}

// The export holds what the contact's customers and activations recorded of it, though their
// streams name the contact only in their first event: an activation's externalUserId
// (ActivationCompleted is not in the contact's history) and a customer's new name
// (CustomerRenamed), as this build records them and as builds before erasure did (without
// contactId). Nothing of another buyer's is in it.
func TestExportHoldsWhatTheContactsCustomersAndActivationsRecorded(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		pro := svc.NewProduct(t, acc.ID, map[string]any{"name": "Pro", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
			"pricingTiers": []any{map[string]any{"name": "Once", "amount": 1000, "currency": "EUR", "interval": "one_time"}}})
		export := func(contactID string) servicetest.Response {
			return svc.Operator.Get(t, admin+"/contacts/"+contactID+"/export", "").Expect(t, http.StatusOK)
		}

		bought := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "qzexportext@example.com", "name": "Qzexport Buyer"})
		contactID := bought.Object(t, "customer")["contactId"].(string)
		const external = "qzexport-external-user-77"
		svc.API.Post(t, "/api/v1/checkout/activations/"+bought.Object(t, "activation")["token"].(string)+"/complete", acc.Key,
			map[string]any{"externalUserId": external}).Expect(t, http.StatusOK)

		// Another buyer, whose completion and rename are recorded as builds before erasure did.
		other := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "qzexportold@example.com", "name": "Qzold Name"})
		otherID, otherCustomer := other.Object(t, "customer")["contactId"].(string), other.Object(t, "customer")["id"].(string)
		otherActivation := domain.ActivationIDFor(other.Object(t, "activation")["token"].(string))
		const oldExternal, renamed = "qzexport-old-external", "Qzrenamed Legacy"
		pos, err := svc.App.Store().Append(ctx, domain.Metadata{AccountID: acc.ID, Actor: string(domain.OperatorActor)},
			domain.StreamAppend{StreamID: otherActivation, ExpectedVersion: domain.AnyVersion, Events: []domain.Event{
				domain.ActivationCompleted{ActivationID: otherActivation, ExternalUserID: oldExternal, CompletedAt: time.Now().UTC()}}},
			domain.StreamAppend{StreamID: otherCustomer, ExpectedVersion: domain.AnyVersion, Events: []domain.Event{
				domain.CustomerRenamed{CustomerID: otherCustomer, Name: renamed}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
			t.Fatal(err)
		}

		for contact, want := range map[string][]string{contactID: {external, "qzexportext@example.com"}, otherID: {oldExternal, renamed}} {
			res := export(contact)
			for _, v := range want {
				if !strings.Contains(string(res.Raw), v) {
					t.Errorf("the export of %s misses %q: %.2000s", contact, v, res.Raw)
				}
			}
			var types []string
			for _, e := range res.Object(t, "export")["events"].([]any) {
				types = append(types, e.(map[string]any)["type"].(string))
			}
			if !slices.Contains(types, "ActivationCompleted") || !slices.Contains(types, "CustomerCreated") {
				t.Errorf("the export of %s lists the events %v, want its activation's completion and its customer's creation among them", contact, types)
			}
		}
		if res := export(contactID); strings.Contains(string(res.Raw), oldExternal) || strings.Contains(string(res.Raw), "qzexportold") {
			t.Errorf("the export of %s shows another buyer's data: %.2000s", contactID, res.Raw)
		}
		if customers := export(otherID).Object(t, "export")["customers"].([]any); len(customers) != 1 || customers[0].(map[string]any)["name"] != renamed {
			t.Errorf("the export's customers are %v, want the one customer with its new name %q", customers, renamed)
		}
	})
}

// The export shows each payment with the status it has now, as GET /api/v1/customers/{id} does:
// one refunded in full "refunded", one refunded in part "partially_refunded", one left alone
// "succeeded", read from the refunds in the contact's history.
func TestExportShowsEachPaymentWithItsStatusAfterRefunds(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, simpleProduct("Ebook"))
		body := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "export-refunds@example.com"}
		var txnIDs []string
		var contactID, customerID string
		for range 3 {
			res := buy(t, svc, acc.ID, body)
			txnIDs = append(txnIDs, res.Object(t, "transaction")["id"].(string))
			contactID, customerID = res.Object(t, "customer")["contactId"].(string), res.Object(t, "customer")["id"].(string)
		}
		svc.Operator.Post(t, checkoutPath(acc.ID, "transactions/"+txnIDs[0]+"/refund"), "", map[string]any{}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, checkoutPath(acc.ID, "transactions/"+txnIDs[1]+"/refund"), "", map[string]any{"amountCents": 100}).Expect(t, http.StatusOK)
		want := map[string]string{txnIDs[0]: "refunded", txnIDs[1]: "partially_refunded", txnIDs[2]: "succeeded"}

		customer := svc.API.Get(t, "/api/v1/customers/"+customerID, acc.Key).Expect(t, http.StatusOK).Object(t, "customer")
		for _, txn := range customer["transactions"].([]any) {
			if txn := txn.(map[string]any); txn["status"] != want[txn["id"].(string)] {
				t.Fatalf("GET customer shows %s as %v, want %s", txn["id"], txn["status"], want[txn["id"].(string)])
			}
		}
		export := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/export", "").Expect(t, http.StatusOK).Object(t, "export")
		txns := export["transactions"].([]any)
		if len(txns) != len(want) {
			t.Fatalf("export transactions = %v, want %d", txns, len(want))
		}
		for _, txn := range txns {
			txn := txn.(map[string]any)
			if id := txn["id"].(string); txn["status"] != want[id] {
				t.Errorf("the export shows %s as %v, want %q as GET /api/v1/customers/{id} shows it", id, txn["status"], want[id])
			}
		}
	})
}

// recordErasureOnly appends what the erasure command appends, ContactErased, and waits for the
// read models, but does nothing of what its wrapper does after (the kept answers' rewrite): an
// erasure cut short by a crash after its record.
func recordErasureOnly(t *testing.T, svc *servicetest.Service, accountID, contactID string) {
	t.Helper()
	ctx := context.Background()
	pos, err := svc.App.Store().Append(ctx, domain.Metadata{AccountID: accountID, Actor: string(domain.OperatorActor)},
		domain.StreamAppend{StreamID: contactID, ExpectedVersion: domain.AnyVersion, Events: []domain.Event{
			domain.ContactErased{ContactID: contactID, AccountID: accountID, ErasedAt: time.Now().UTC()}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
		t.Fatal(err)
	}
}
