package api_test

import (
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func TestCustomFieldsAreListedInDefinitionOrder(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		company := svc.NewCustomField(t, acc.ID, "Company")
		plan := svc.NewCustomField(t, acc.ID, "Plan")
		svc.NewCustomField(t, other.ID, "Theirs")

		all := svc.API.Get(t, "/api/v1/custom-fields", acc.Key).Expect(t, http.StatusOK).List(t, "customFields")
		if len(all) != 2 || all[0]["id"] != company || all[0]["name"] != "Company" || all[1]["id"] != plan {
			t.Fatalf("custom fields = %v (definition order, this account only)", all)
		}
		// The ids listed are those upserts take.
		svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "cf@example.com", "customFields": map[string]any{company: "Acme"}}).Expect(t, http.StatusOK)

		page1 := svc.API.Get(t, "/api/v1/custom-fields?limit=1", acc.Key).Expect(t, http.StatusOK)
		if got := page1.List(t, "customFields"); len(got) != 1 || got[0]["id"] != company {
			t.Fatalf("page 1 = %v", got)
		}
		later := svc.NewCustomField(t, acc.ID, "Later") // written between the pages
		page2 := svc.API.Get(t, "/api/v1/custom-fields?limit=2&cursor="+page1.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK)
		if got := page2.List(t, "customFields"); len(got) != 2 || got[0]["id"] != plan || got[1]["id"] != later {
			t.Fatalf("page 2 = %v", got)
		}

		svc.API.Get(t, "/api/v1/custom-fields?cursor=bogus", acc.Key).ExpectError(t, http.StatusBadRequest)
		svc.API.Get(t, "/api/v1/custom-fields?limit=0", acc.Key).ExpectError(t, http.StatusBadRequest)
		svc.API.Get(t, "/api/v1/custom-fields", svc.NewKey(t, acc.ID, []string{"tags:read"})).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/custom-fields", svc.NewKey(t, acc.ID, []string{"contacts:read"})).Expect(t, http.StatusOK)
	})
}

func TestLeadsAreReadBackNewestFirst(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		sales := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		partners := svc.NewCRM(t, acc.ID, "Partners", "Intro")
		theirs := svc.NewCRM(t, other.ID, "Theirs", "Only")
		create := func(key, crmID, email string) map[string]any {
			return svc.API.Post(t, "/api/v1/crms/"+crmID+"/leads", key, map[string]any{"contactEmail": email, "title": email}).
				Expect(t, http.StatusCreated).Object(t, "lead")
		}
		first := create(acc.Key, sales.ID, "one@example.com")
		second := create(acc.Key, sales.ID, "two@example.com")
		create(acc.Key, partners.ID, "elsewhere@example.com")
		foreign := create(other.Key, theirs.ID, "foreign@example.com")

		updated := svc.API.Patch(t, "/api/v1/crms/"+sales.ID+"/leads/"+first["id"].(string), acc.Key, map[string]any{"stageId": sales.Stages[1], "amount": 4900}).
			Expect(t, http.StatusOK).Object(t, "lead")
		got := svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads/"+first["id"].(string), acc.Key).Expect(t, http.StatusOK).Object(t, "lead")
		for _, k := range []string{"id", "crmId", "stageId", "contactId", "title", "amount", "createdAt", "updatedAt"} {
			if got[k] != updated[k] {
				t.Errorf("lead %s = %v, the update answered %v", k, got[k], updated[k])
			}
		}
		if got["stageId"] != sales.Stages[1] || got["amount"] != float64(4900) {
			t.Fatalf("lead read back = %v", got)
		}

		list := svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads", acc.Key).Expect(t, http.StatusOK).List(t, "leads")
		if len(list) != 2 || list[0]["id"] != second["id"] || list[1]["id"] != first["id"] {
			t.Fatalf("leads = %v (newest first, this CRM only)", list)
		}
		page1 := svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads?limit=1", acc.Key).Expect(t, http.StatusOK)
		if got := page1.List(t, "leads"); len(got) != 1 || got[0]["id"] != second["id"] {
			t.Fatalf("page 1 = %v", got)
		}
		create(acc.Key, sales.ID, "three@example.com") // newer: before the cursor, not on the next page
		page2 := svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads?limit=5&cursor="+page1.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK)
		if got := page2.List(t, "leads"); len(got) != 1 || got[0]["id"] != first["id"] {
			t.Fatalf("page 2 = %v", got)
		}
		if _, has := page2.Body["nextCursor"]; has {
			t.Fatal("the last page has a nextCursor")
		}

		svc.API.Get(t, "/api/v1/crms/"+theirs.ID+"/leads", acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/crms/"+theirs.ID+"/leads/"+foreign["id"].(string), acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads/"+foreign["id"].(string), acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/crms/crm_doesnotexist/leads", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads/lead_doesnotexist", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/crms/"+partners.ID+"/leads/"+first["id"].(string), acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads?cursor=bogus", acc.Key).ExpectError(t, http.StatusBadRequest)
		readOnlyContacts := svc.NewKey(t, acc.ID, []string{"contacts:read"})
		svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads", readOnlyContacts).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads/"+first["id"].(string), readOnlyContacts).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/leads", svc.NewKey(t, acc.ID, []string{"crm:read"})).Expect(t, http.StatusOK)
	})
}
