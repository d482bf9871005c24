package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// A crm.move tag opens the contact's lead in its CRM at its stage, or moves the lead the contact
// has there, whichever path applied the tag; a tag the contact already has runs nothing again.
func TestCRMMoveAutomation(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		sales := svc.NewCRM(t, acc.ID, "Sales", "New", "Hot", "Won")
		support := svc.NewCRM(t, acc.ID, "Support", "Open")
		prospect := svc.NewTag(t, acc.ID, "Prospect", moveTo(sales.ID, sales.Stages[0]))
		hot := svc.NewTag(t, acc.ID, "Hot", moveTo(sales.ID, sales.Stages[1]))
		customer := svc.NewTag(t, acc.ID, "Customer", moveTo(sales.ID, sales.Stages[2]), map[string]any{"type": "email.send", "subject": "Welcome", "body": "Hi"})
		plain := svc.NewTag(t, acc.ID, "Plain")

		// onlyLead returns the contact's one lead in a CRM.
		onlyLead := func(t *testing.T, crmID, contactID string) map[string]any {
			t.Helper()
			leads := leadsOf(t, svc, acc.ID, crmID, contactID)
			if len(leads) != 1 {
				t.Fatalf("contact %s has %d leads in %s, want 1: %v", contactID, len(leads), crmID, leads)
			}
			return leads[0]
		}

		t.Run("contacts API", func(t *testing.T) {
			c := upsert(t, svc, acc.Key, map[string]any{"email": "Path.One@Example.com", "tagNames": []string{"Prospect"}}).Expect(t, http.StatusOK).Object(t, "contact")
			id := c["id"].(string)
			lead := onlyLead(t, sales.ID, id)
			if lead["stageId"] != sales.Stages[0] || lead["title"] != "Path.One@Example.com" || lead["contactId"] != id {
				t.Fatalf("lead opened by the tag = %v", lead)
			}
			upsert(t, svc, acc.Key, map[string]any{"email": "path.one@example.com", "tagIds": []string{hot}}).Expect(t, http.StatusOK)
			moved := onlyLead(t, sales.ID, id)
			if moved["id"] != lead["id"] || moved["stageId"] != sales.Stages[1] {
				t.Fatalf("lead after Hot = %v", moved)
			}
			// Prospect again: the contact has it, so its automation does not run and the lead
			// stays at Hot.
			upsert(t, svc, acc.Key, map[string]any{"email": "path.one@example.com", "tagNames": []string{"Prospect"}}).Expect(t, http.StatusOK)
			if again := onlyLead(t, sales.ID, id); again["stageId"] != sales.Stages[1] {
				t.Fatalf("re-applying a tag the contact has moved its lead: %v", again)
			}
			counts := countTypes(history(t, svc, acc.ID, id))
			if counts["LeadCreated"] != 1 || counts["LeadMoved"] != 1 || counts["LeadAssigned"] != 1 || counts["TagApplied"] != 2 {
				t.Fatalf("history = %v", counts)
			}
			if leads := leadsOf(t, svc, acc.ID, support.ID, id); len(leads) != 0 {
				t.Fatalf("a lead appeared in another CRM: %v", leads)
			}
		})

		t.Run("tags API", func(t *testing.T) {
			c := svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "path.two@example.com", "tagIds": []string{hot}}).Expect(t, http.StatusOK).Object(t, "contact")
			id := c["id"].(string)
			if lead := onlyLead(t, sales.ID, id); lead["stageId"] != sales.Stages[1] {
				t.Fatalf("lead = %v", lead)
			}
			svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagIds": []string{customer, plain}}).Expect(t, http.StatusOK)
			if lead := onlyLead(t, sales.ID, id); lead["stageId"] != sales.Stages[2] {
				t.Fatalf("lead after Customer = %v", lead)
			}
			// Removing a tag runs no automation; adding it back runs it again.
			svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagIds": []string{hot}, "action": "remove"}).Expect(t, http.StatusOK)
			if lead := onlyLead(t, sales.ID, id); lead["stageId"] != sales.Stages[2] {
				t.Fatalf("removing a tag moved the lead: %v", lead)
			}
			svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagIds": []string{hot}}).Expect(t, http.StatusOK)
			if lead := onlyLead(t, sales.ID, id); lead["stageId"] != sales.Stages[1] {
				t.Fatalf("re-adding a removed tag did not move the lead: %v", lead)
			}
			counts := countTypes(history(t, svc, acc.ID, id))
			if counts["EmailQueued"] != 1 || counts["LeadCreated"] != 1 || counts["LeadMoved"] != 2 {
				t.Fatalf("history = %v", counts)
			}
		})

		t.Run("lead creation", func(t *testing.T) {
			// A lead created in Support with the Hot tag: the tag opens a Sales lead too.
			res := svc.API.Post(t, "/api/v1/crms/"+support.ID+"/leads", acc.Key, map[string]any{"contactEmail": "path.three@example.com", "tagIds": []string{hot}}).Expect(t, http.StatusCreated)
			id := res.Object(t, "contact")["id"].(string)
			if lead := onlyLead(t, support.ID, id); lead["id"] != res.Object(t, "lead")["id"] {
				t.Fatalf("support lead = %v", lead)
			}
			if lead := onlyLead(t, sales.ID, id); lead["stageId"] != sales.Stages[1] {
				t.Fatalf("sales lead opened by the tag = %v", lead)
			}
			// A lead created in Sales with a tag that moves into Sales: the tag moves the new
			// lead rather than opening another.
			res = svc.API.Post(t, "/api/v1/crms/"+sales.ID+"/leads", acc.Key, map[string]any{"contactEmail": "path.four@example.com", "tagIds": []string{customer}}).Expect(t, http.StatusCreated)
			id = res.Object(t, "contact")["id"].(string)
			lead := onlyLead(t, sales.ID, id)
			if lead["id"] != res.Object(t, "lead")["id"] || lead["stageId"] != sales.Stages[2] || res.Object(t, "lead")["stageId"] != sales.Stages[2] {
				t.Fatalf("lead = %v, answered %v", lead, res.Object(t, "lead"))
			}
		})

		t.Run("form submission", func(t *testing.T) {
			formID, fields := svc.NewForm(t, acc.ID, "Signup", []string{prospect}, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
			sub := svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: "path.five@example.com"}}).
				Expect(t, http.StatusCreated).Object(t, "submission")
			id := sub["contactId"].(string)
			if lead := onlyLead(t, sales.ID, id); lead["stageId"] != sales.Stages[0] {
				t.Fatalf("lead opened by the form's tag = %v", lead)
			}
			// A second submission: the contact has the tag, nothing moves.
			svc.API.Patch(t, "/api/v1/crms/"+sales.ID+"/leads/"+onlyLead(t, sales.ID, id)["id"].(string), acc.Key, map[string]any{"stageId": sales.Stages[2]}).Expect(t, http.StatusOK)
			svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: "path.five@example.com"}}).Expect(t, http.StatusCreated)
			if lead := onlyLead(t, sales.ID, id); lead["stageId"] != sales.Stages[2] {
				t.Fatalf("a second submission moved the lead: %v", lead)
			}
		})

		t.Run("two tags into one CRM in one request", func(t *testing.T) {
			c := upsert(t, svc, acc.Key, map[string]any{"email": "path.six@example.com", "tagNames": []string{"Prospect", "Hot"}}).Expect(t, http.StatusOK).Object(t, "contact")
			id := c["id"].(string)
			if lead := onlyLead(t, sales.ID, id); lead["stageId"] != sales.Stages[1] {
				t.Fatalf("lead = %v (opened by Prospect, then moved by Hot)", lead)
			}
			var types []string
			for _, e := range history(t, svc, acc.ID, id) {
				if strings.HasPrefix(e["type"].(string), "Lead") {
					types = append(types, e["type"].(string))
				}
			}
			if strings.Join(types, ",") != "LeadAssigned,LeadCreated,LeadMoved" {
				t.Fatalf("lead events = %v", types)
			}
		})
	})
}

// CreateTag refuses a crm.move automation that could never run.
func TestCRMMoveAutomationValidation(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		sales := svc.NewCRM(t, acc.ID, "Sales", "New")
		second := svc.NewCRM(t, acc.ID, "Second", "Start")
		foreign := svc.NewCRM(t, other.ID, "Theirs", "Only")
		base := "/admin/v1/accounts/" + acc.ID + "/tags"
		cases := []struct {
			name       string
			automation map[string]any
			want       string
		}{
			{"unknown CRM", moveTo("crm_doesnotexist", sales.Stages[0]), "crmId"},
			{"CRM of another account", moveTo(foreign.ID, foreign.Stages[0]), "crmId"},
			{"not a CRM id", moveTo(sales.Stages[0], sales.Stages[0]), "crmId"},
			{"stage of another CRM", moveTo(sales.ID, second.Stages[0]), "stageId"},
			{"no stage", map[string]any{"type": "crm.move", "crmId": sales.ID}, "stageId"},
			{"no CRM", map[string]any{"type": "crm.move", "stageId": sales.Stages[0]}, "crmId"},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := svc.Operator.Post(t, base, "", map[string]any{"name": "Bad " + string(rune('A'+i)), "automations": []map[string]any{tc.automation}}).ExpectError(t, http.StatusBadRequest)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		if tags := svc.Operator.Get(t, base, "").Expect(t, http.StatusOK).List(t, "tags"); len(tags) != 0 {
			t.Fatalf("refused tags were created: %v", tags)
		}
		tag := svc.Operator.Post(t, base, "", map[string]any{"name": "Good", "automations": []map[string]any{moveTo(sales.ID, sales.Stages[0])}}).Expect(t, http.StatusCreated).Object(t, "tag")
		a := tag["automations"].([]any)[0].(map[string]any)
		if a["type"] != "crm.move" || a["crmId"] != sales.ID || a["stageId"] != sales.Stages[0] {
			t.Fatalf("automation = %v", a)
		}
	})
}
