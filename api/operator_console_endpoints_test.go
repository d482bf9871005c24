package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The operator endpoints the console reads: every account, an account's contacts searched by
// email, and one contact with its tags, fields, leads and purchases.
func TestOperatorAccountsContactsAndContactDetail(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID

		var listed []string
		for cursor := ""; ; {
			res := svc.Operator.Get(t, "/admin/v1/accounts?limit=200&cursor="+url.QueryEscape(cursor), "").Expect(t, http.StatusOK)
			for _, a := range res.List(t, "accounts") {
				listed = append(listed, a["id"].(string))
			}
			next, more := res.Body["nextCursor"].(string)
			if !more {
				break
			}
			cursor = next
		}
		if !slices.Contains(listed, acc.ID) || !slices.Contains(listed, other.ID) || slices.Index(listed, acc.ID) > slices.Index(listed, other.ID) {
			t.Errorf("accounts %v: want %s before %s (oldest first)", listed, acc.ID, other.ID)
		}

		field := svc.NewCustomField(t, acc.ID, "Company")
		tag := svc.NewTag(t, acc.ID, "Customer")
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		contact := upsert(t, svc, acc.Key, map[string]any{"email": "Ada@Example.com", "firstName": "Ada", "tagIds": []string{tag},
			"customFields": map[string]any{field: "Analytical Engines"}}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		upsert(t, svc, acc.Key, map[string]any{"email": "grace@example.com"}).Expect(t, http.StatusOK)
		svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": "ada@example.com", "title": "Big deal"}).Expect(t, http.StatusCreated)
		product := svc.NewProduct(t, acc.ID, simpleProduct("Book"))
		buy(t, svc, acc.ID, map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "ada@example.com"})

		found := svc.Operator.Get(t, admin+"/contacts?email=ADA@example.com", "").Expect(t, http.StatusOK).List(t, "contacts")
		if len(found) != 1 || found[0]["id"] != contact {
			t.Fatalf("search by email: %v, want the one contact %s", found, contact)
		}
		if all := svc.Operator.Get(t, admin+"/contacts", "").Expect(t, http.StatusOK).List(t, "contacts"); len(all) != 2 {
			t.Errorf("contacts of the account: %d, want 2", len(all))
		}
		if none := svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/contacts?email=ada@example.com", "").Expect(t, http.StatusOK).List(t, "contacts"); len(none) != 0 {
			t.Errorf("another account's search found %v", none)
		}

		c := svc.Operator.Get(t, admin+"/contacts/"+contact, "").Expect(t, http.StatusOK).Object(t, "contact")
		if c["firstName"] != "Ada" || !slices.Equal(servicetest.Strings(t, c["tagIds"]), []string{tag}) || c["customFields"].(map[string]any)[field] != "Analytical Engines" {
			t.Errorf("contact: %v", c)
		}
		leads := c["leads"].([]any)
		if len(leads) != 1 || leads[0].(map[string]any)["crmId"] != crm.ID || leads[0].(map[string]any)["title"] != "Big deal" {
			t.Errorf("leads: %v", leads)
		}
		customers := c["customers"].([]any)
		if len(customers) != 1 {
			t.Fatalf("customers: %v", customers)
		}
		txns := customers[0].(map[string]any)["transactions"].([]any)
		if len(txns) != 1 || txns[0].(map[string]any)["productId"] != product.ID || txns[0].(map[string]any)["amount"] != float64(1000) {
			t.Errorf("transactions: %v", txns)
		}
		svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/contacts/"+contact, "").ExpectError(t, http.StatusForbidden)
		svc.Operator.Get(t, admin+"/contacts/con_nothing", "").ExpectError(t, http.StatusNotFound)
		svc.Operator.Get(t, admin+"/contacts?email=ada@example.com", "wrong-token").ExpectError(t, http.StatusUnauthorized)
	})
}

// The projections as `funnel projections list` shows them, and a rebuild from the operator API
// that brings the read model back as it was; the outbox and unknown names are refused.
func TestOperatorProjectionsAndRebuild(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		contact := upsert(t, svc, acc.Key, map[string]any{"email": "rebuild@example.com", "firstName": "Re"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)

		list := svc.Operator.Get(t, "/admin/v1/projections?limit=200", "").Expect(t, http.StatusOK).List(t, "projections")
		byName := map[string]map[string]any{}
		for _, p := range list {
			byName[p["name"].(string)] = p
		}
		if byName["contacts"] == nil || byName["contacts"]["rebuildable"] != true || byName["contacts"]["position"].(float64) <= 0 {
			t.Fatalf("projections: %v", list)
		}
		// Paged like every list: pages of one, following nextCursor, give the same names in order.
		var paged []any
		for cursor := ""; ; {
			res := svc.Operator.Get(t, "/admin/v1/projections?limit=1&cursor="+url.QueryEscape(cursor), "").Expect(t, http.StatusOK)
			for _, p := range res.List(t, "projections") {
				paged = append(paged, p["name"])
			}
			next, more := res.Body["nextCursor"].(string)
			if !more || len(paged) > len(list) {
				break
			}
			cursor = next
		}
		var names []any
		for _, p := range list {
			names = append(names, p["name"])
		}
		if !slices.Equal(paged, names) {
			t.Errorf("projections by pages of one: %v, want %v", paged, names)
		}
		svc.Operator.Get(t, "/admin/v1/projections?cursor=not-a-cursor", "").ExpectError(t, http.StatusBadRequest)
		svc.Operator.Get(t, "/admin/v1/projections?limit=0", "").ExpectError(t, http.StatusBadRequest)
		var outbox string
		for name, p := range byName {
			if p["rebuildable"] == false {
				outbox = name
			}
		}
		if outbox == "" {
			t.Fatalf("no projection that cannot be rebuilt (the webhook outbox): %v", list)
		}

		res := svc.Operator.Post(t, "/admin/v1/projections/contacts/rebuild", "", nil).Expect(t, http.StatusOK)
		if res.Body["rebuiltTo"].(float64) < byName["contacts"]["position"].(float64) || res.Object(t, "projection")["name"] != "contacts" {
			t.Errorf("rebuild: %v", res.Body)
		}
		if got := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contact, "").Expect(t, http.StatusOK).Object(t, "contact"); got["firstName"] != "Re" {
			t.Errorf("contact after the rebuild: %v", got)
		}
		svc.Operator.Post(t, "/admin/v1/projections/"+outbox+"/rebuild", "", nil).ExpectError(t, http.StatusConflict)
		svc.Operator.Post(t, "/admin/v1/projections/nothing/rebuild", "", nil).ExpectError(t, http.StatusNotFound)
		svc.Operator.Get(t, "/admin/v1/projections", "wrong-token").ExpectError(t, http.StatusUnauthorized)
	})
}

// A process of an older release than the schema a newer one migrated (still serving during a
// rolling upgrade) rebuilds nothing, and says why: its rows would overwrite what the newer release
// writes. 409, not an internal error. (A service of its own: the schema is changed under it.)
func TestOperatorRebuildOnANewerSchemaIsAConflict(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		svc := servicetest.Start(t, dialect, func(*service.Config) {})
		if _, err := svc.App.DB().Write.Exec(`INSERT INTO goose_db_version (version_id, is_applied) SELECT MAX(version_id) + 1, true FROM goose_db_version`); err != nil {
			t.Fatal(err)
		}
		if e := svc.Operator.Post(t, "/admin/v1/projections/contacts/rebuild", "", nil).ExpectError(t, http.StatusConflict); !strings.Contains(e, "newer than this binary knows") {
			t.Errorf("a rebuild on a newer schema: %q", e)
		}
	})
}
