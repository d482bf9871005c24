package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func TestCRMsAndStages(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		sales := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		partners := svc.NewCRM(t, acc.ID, "Partners", "Intro")
		foreign := svc.NewCRM(t, other.ID, "Theirs", "Only")

		list := svc.API.Get(t, "/api/v1/crms", acc.Key).Expect(t, http.StatusOK)
		crms := list.List(t, "crms")
		if len(crms) != 2 || crms[0]["id"] != sales.ID || crms[1]["id"] != partners.ID {
			t.Fatalf("crms = %v (creation order, this account only)", crms)
		}
		if _, has := list.Body["nextCursor"]; has {
			t.Fatal("a one-page list has a nextCursor")
		}
		first := crms[0]
		stages := first["stages"].([]any)
		if first["name"] != "Sales" || first["createdAt"] == nil || len(stages) != 2 {
			t.Fatalf("crm view = %v", first)
		}
		if st := stages[1].(map[string]any); st["id"] != sales.Stages[1] || st["name"] != "Won" || st["order"] != float64(2) {
			t.Fatalf("stage view = %v", st)
		}

		page1 := svc.API.Get(t, "/api/v1/crms?limit=1", acc.Key).Expect(t, http.StatusOK)
		if got := page1.List(t, "crms"); len(got) != 1 || got[0]["id"] != sales.ID {
			t.Fatalf("page 1 = %v", got)
		}
		svc.NewCRM(t, acc.ID, "Later", "S") // writes go on; the cursor still continues after page 1
		page2 := svc.API.Get(t, "/api/v1/crms?limit=1&cursor="+page1.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK)
		if got := page2.List(t, "crms"); len(got) != 1 || got[0]["id"] != partners.ID {
			t.Fatalf("page 2 = %v", got)
		}
		svc.API.Get(t, "/api/v1/crms?limit=0", acc.Key).ExpectError(t, http.StatusBadRequest)
		svc.API.Get(t, "/api/v1/crms?cursor=bogus", acc.Key).ExpectError(t, http.StatusBadRequest)

		got := svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/stages", acc.Key).Expect(t, http.StatusOK).List(t, "stages")
		if len(got) != 2 || got[0]["id"] != sales.Stages[0] || got[0]["name"] != "New" || got[0]["order"] != float64(1) || got[1]["id"] != sales.Stages[1] {
			t.Fatalf("stages = %v", got)
		}
		paged := svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/stages?limit=1", acc.Key).Expect(t, http.StatusOK)
		rest := svc.API.Get(t, "/api/v1/crms/"+sales.ID+"/stages?limit=1&cursor="+paged.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK).List(t, "stages")
		if len(rest) != 1 || rest[0]["id"] != sales.Stages[1] {
			t.Fatalf("second page of stages = %v", rest)
		}
		svc.API.Get(t, "/api/v1/crms/"+foreign.ID+"/stages", acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/crms/crm_doesnotexist/stages", acc.Key).ExpectError(t, http.StatusNotFound)
	})
}

func TestOperatorCreateCRM(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		base := "/admin/v1/accounts/" + acc.ID + "/crms"
		crm := svc.Operator.Post(t, base, "", map[string]any{"name": " Sales ", "stages": []map[string]any{{"name": "New"}, {"name": " Won "}}}).
			Expect(t, http.StatusCreated).Object(t, "crm")
		stages := crm["stages"].([]any)
		if !strings.HasPrefix(crm["id"].(string), "crm_") || crm["name"] != "Sales" || len(stages) != 2 {
			t.Fatalf("crm = %v", crm)
		}
		won := stages[1].(map[string]any)
		if !strings.HasPrefix(won["id"].(string), "stg_") || won["name"] != "Won" || won["order"] != float64(2) {
			t.Fatalf("stage = %v", won)
		}
		for name, body := range map[string]any{
			"no name":          map[string]any{"stages": []map[string]any{{"name": "New"}}},
			"no stages":        map[string]any{"name": "X"},
			"empty stages":     map[string]any{"name": "X", "stages": []map[string]any{}},
			"blank stage name": map[string]any{"name": "X", "stages": []map[string]any{{"name": " "}}},
			"stages an object": map[string]any{"name": "X", "stages": map[string]any{"name": "New"}},
		} {
			t.Run(name, func(t *testing.T) {
				svc.Operator.Post(t, base, "", body).ExpectError(t, http.StatusBadRequest)
			})
		}
		if list := svc.Operator.Get(t, base, "").Expect(t, http.StatusOK).List(t, "crms"); len(list) != 1 {
			t.Fatalf("refused creates left CRMs behind: %v", list)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/acc_nope/crms", "", map[string]any{"name": "X", "stages": []map[string]any{{"name": "S"}}}).ExpectError(t, http.StatusNotFound)
	})
}

func TestCreateLead(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Qualified", "Won")
		otherCRM := svc.NewCRM(t, acc.ID, "Other", "Elsewhere")
		foreign := svc.NewCRM(t, other.ID, "Theirs", "Only")
		vip := svc.NewTag(t, acc.ID, "VIP")
		path := "/api/v1/crms/" + crm.ID + "/leads"

		res := svc.API.Post(t, path, acc.Key, map[string]any{
			"title": "Big deal", "contactEmail": "Lea@Example.com", "firstName": "Lea", "tagIds": []string{vip, "tag_unknown"},
		}).Expect(t, http.StatusCreated)
		if res.Body["success"] != true {
			t.Fatalf("body = %s", res.Raw)
		}
		lead, contact := res.Object(t, "lead"), res.Object(t, "contact")
		if !strings.HasPrefix(lead["id"].(string), "lead_") || lead["crmId"] != crm.ID || lead["stageId"] != crm.Stages[0] ||
			lead["title"] != "Big deal" || lead["amount"] != float64(0) || lead["contactId"] != contact["id"] ||
			lead["createdAt"] == nil || lead["updatedAt"] == nil {
			t.Fatalf("lead = %v (default stage is the first)", lead)
		}
		if contact["email"] != "Lea@Example.com" || contact["firstName"] != "Lea" || !slices.Equal(servicetest.Strings(t, contact["tagIds"]), []string{vip}) {
			t.Fatalf("contact = %v", contact)
		}
		if got := svc.API.Get(t, "/api/v1/contacts/"+contact["id"].(string), acc.Key).Expect(t, http.StatusOK).Object(t, "contact"); got["firstName"] != "Lea" {
			t.Fatalf("contact read back = %v", got)
		}

		// An existing contact (any casing) gets another lead; no title means the contact's email.
		second := svc.API.Post(t, path, acc.Key, map[string]any{"contactEmail": "lea@example.com", "stageId": crm.Stages[1]}).Expect(t, http.StatusCreated)
		lead2 := second.Object(t, "lead")
		if lead2["id"] == lead["id"] || lead2["contactId"] != contact["id"] || lead2["stageId"] != crm.Stages[1] || lead2["title"] != "Lea@Example.com" {
			t.Fatalf("second lead = %v", lead2)
		}
		if c := second.Object(t, "contact"); c["firstName"] != "Lea" {
			t.Fatalf("a lead without firstName changed the contact: %v", c)
		}
		if leads := leadsOf(t, svc, acc.ID, crm.ID, contact["id"].(string)); len(leads) != 2 || leads[0]["id"] != lead["id"] {
			t.Fatalf("leads of the contact = %v", leads)
		}

		cases := []struct {
			name   string
			path   string
			body   any
			status int
			want   string
		}{
			{"no contactEmail", path, map[string]any{"title": "x"}, http.StatusBadRequest, "contactEmail"},
			{"invalid contactEmail", path, map[string]any{"contactEmail": "nope"}, http.StatusBadRequest, "contactEmail"},
			{"contactEmail not a string", path, map[string]any{"contactEmail": 7}, http.StatusBadRequest, "contactEmail"},
			{"stage of another CRM", path, map[string]any{"contactEmail": "bad1@example.com", "stageId": otherCRM.Stages[0]}, http.StatusBadRequest, "stageId"},
			{"title too long", path, map[string]any{"contactEmail": "bad2@example.com", "title": strings.Repeat("t", 256)}, http.StatusBadRequest, "title"},
			{"firstName too long", path, map[string]any{"contactEmail": "bad3@example.com", "firstName": strings.Repeat("f", 256)}, http.StatusBadRequest, "firstName"},
			{"tagIds not an array", path, map[string]any{"contactEmail": "bad4@example.com", "tagIds": vip}, http.StatusBadRequest, "tagIds"},
			{"malformed JSON", path, `{"contactEmail": `, http.StatusBadRequest, "JSON"},
			{"CRM of another account", "/api/v1/crms/" + foreign.ID + "/leads", map[string]any{"contactEmail": "bad5@example.com"}, http.StatusForbidden, "another account"},
			{"unknown CRM", "/api/v1/crms/crm_doesnotexist/leads", map[string]any{"contactEmail": "bad6@example.com"}, http.StatusNotFound, "crm"},
			{"not a CRM id", "/api/v1/crms/" + contact["id"].(string) + "/leads", map[string]any{"contactEmail": "lea@example.com"}, http.StatusNotFound, "crm"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := svc.API.Post(t, tc.path, acc.Key, tc.body).ExpectError(t, tc.status)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		// The refused requests wrote nothing: no contact, no lead.
		for _, email := range []string{"bad1@example.com", "bad2@example.com", "bad3@example.com", "bad5@example.com", "bad6@example.com"} {
			if c := contactByEmail(t, svc, acc.Key, email); c != nil {
				t.Fatalf("a refused lead created contact %v", c)
			}
		}
		if leads := leadsOf(t, svc, acc.ID, crm.ID, ""); len(leads) != 2 {
			t.Fatalf("leads after refused requests = %d", len(leads))
		}
		if leads := leadsOf(t, svc, other.ID, foreign.ID, ""); len(leads) != 0 {
			t.Fatalf("another account's CRM got leads: %v", leads)
		}
	})
}

func TestUpdateLead(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Qualified", "Won")
		second := svc.NewCRM(t, acc.ID, "Second", "Start")
		foreign := svc.NewCRM(t, other.ID, "Theirs", "Only")
		create := func(crmID, key, email string) map[string]any {
			return svc.API.Post(t, "/api/v1/crms/"+crmID+"/leads", key, map[string]any{"contactEmail": email, "title": "Deal"}).Expect(t, http.StatusCreated).Object(t, "lead")
		}
		lead := create(crm.ID, acc.Key, "upd@example.com")
		leadPath := "/api/v1/crms/" + crm.ID + "/leads/" + lead["id"].(string)

		got := svc.API.Patch(t, leadPath, acc.Key, map[string]any{"title": "Bigger deal"}).Expect(t, http.StatusOK).Object(t, "lead")
		if got["title"] != "Bigger deal" || got["stageId"] != crm.Stages[0] || got["amount"] != float64(0) || got["id"] != lead["id"] {
			t.Fatalf("after title = %v", got)
		}
		got = svc.API.Patch(t, leadPath, acc.Key, map[string]any{"stageId": crm.Stages[2]}).Expect(t, http.StatusOK).Object(t, "lead")
		if got["stageId"] != crm.Stages[2] || got["title"] != "Bigger deal" {
			t.Fatalf("after stage = %v", got)
		}
		got = svc.API.Patch(t, leadPath, acc.Key, map[string]any{"amount": 125000}).Expect(t, http.StatusOK).Object(t, "lead")
		if got["amount"] != float64(125000) || got["stageId"] != crm.Stages[2] {
			t.Fatalf("after amount = %v", got)
		}
		got = svc.API.Patch(t, leadPath, acc.Key, map[string]any{"title": "All three", "stageId": crm.Stages[1], "amount": 0}).Expect(t, http.StatusOK).Object(t, "lead")
		if got["title"] != "All three" || got["stageId"] != crm.Stages[1] || got["amount"] != float64(0) {
			t.Fatalf("after all three = %v", got)
		}
		final := got

		inSecond := create(second.ID, acc.Key, "second@example.com")
		theirs := create(foreign.ID, other.Key, "theirs@example.com")
		cases := []struct {
			name   string
			path   string
			body   any
			status int
			want   string
		}{
			{"nothing to change", leadPath, map[string]any{}, http.StatusBadRequest, "title, stageId, amount"},
			{"negative amount", leadPath, map[string]any{"amount": -1}, http.StatusBadRequest, "amount"},
			{"fractional amount", leadPath, map[string]any{"amount": 1.5}, http.StatusBadRequest, "amount"},
			{"amount a string", leadPath, map[string]any{"amount": "10"}, http.StatusBadRequest, "amount"},
			{"title too long", leadPath, map[string]any{"title": strings.Repeat("t", 256)}, http.StatusBadRequest, "title"},
			{"stage of another CRM", leadPath, map[string]any{"stageId": second.Stages[0]}, http.StatusBadRequest, "stageId"},
			{"valid stage, bad amount", leadPath, map[string]any{"stageId": crm.Stages[0], "amount": -5}, http.StatusBadRequest, "amount"},
			{"unknown lead", "/api/v1/crms/" + crm.ID + "/leads/lead_doesnotexist", map[string]any{"title": "x"}, http.StatusNotFound, "lead"},
			{"lead of another CRM", "/api/v1/crms/" + crm.ID + "/leads/" + inSecond["id"].(string), map[string]any{"title": "x"}, http.StatusNotFound, "lead"},
			{"lead of another account", "/api/v1/crms/" + crm.ID + "/leads/" + theirs["id"].(string), map[string]any{"title": "x"}, http.StatusForbidden, "another account"},
			{"CRM of another account", "/api/v1/crms/" + foreign.ID + "/leads/" + theirs["id"].(string), map[string]any{"title": "x"}, http.StatusForbidden, "another account"},
			{"unknown CRM", "/api/v1/crms/crm_doesnotexist/leads/" + lead["id"].(string), map[string]any{"title": "x"}, http.StatusNotFound, "crm"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := svc.API.Patch(t, tc.path, acc.Key, tc.body).ExpectError(t, tc.status)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		svc.API.Post(t, leadPath, acc.Key, map[string]any{"title": "x"}).ExpectError(t, http.StatusMethodNotAllowed)

		// Nothing above changed a lead.
		leads := leadsOf(t, svc, acc.ID, crm.ID, "")
		if len(leads) != 1 || leads[0]["title"] != final["title"] || leads[0]["stageId"] != final["stageId"] || leads[0]["amount"] != final["amount"] || leads[0]["updatedAt"] != final["updatedAt"] {
			t.Fatalf("lead after refused updates = %v, want %v", leads, final)
		}
		if l := leadsOf(t, svc, other.ID, foreign.ID, ""); len(l) != 1 || l[0]["title"] != "Deal" {
			t.Fatalf("another account's lead changed: %v", l)
		}
		// The lead's history is on its contact: created, updated and moved, once per change.
		counts := countTypes(history(t, svc, acc.ID, lead["contactId"].(string)))
		if counts["LeadCreated"] != 1 || counts["LeadMoved"] != 2 || counts["LeadUpdated"] != 3 {
			t.Fatalf("lead events in the contact's history = %v", counts)
		}
	})
}

// A blank stage name is refused with the stage's JSON path, and a lead read under another
// account's CRM is 403, as every other path naming that CRM is.
func TestCRMRefusalsNameTheirPlace(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		res := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/crms", "", map[string]any{"name": "X", "stages": []map[string]any{{"name": "A"}, {"name": " "}}})
		res.ExpectError(t, http.StatusBadRequest)
		if res.Body["param"] != "stages[1].name" {
			t.Errorf("blank stage name: %s, want param stages[1].name", res.Raw)
		}
		other := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "A")
		foreign := svc.NewCRM(t, other.ID, "Theirs", "A")
		own := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": "fc@example.com"}).Expect(t, http.StatusCreated).Object(t, "lead")
		path := "/api/v1/crms/" + foreign.ID + "/leads/" + own["id"].(string)
		svc.API.Patch(t, path, acc.Key, map[string]any{"title": "x"}).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, path, acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/crms/"+crm.ID+"/leads/"+own["id"].(string), acc.Key).Expect(t, http.StatusOK)
	})
}
