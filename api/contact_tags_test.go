package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func TestTagContactByEmail(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		vip := svc.NewTag(t, acc.ID, "VIP")
		lead := svc.NewTag(t, acc.ID, "Lead")

		// add (the default action) upserts the contact, with firstName.
		res := svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "Tagged@Example.com", "tagNames": []string{"vip"}, "firstName": "Tia"}).Expect(t, http.StatusOK)
		c := res.Object(t, "contact")
		if res.Body["created"] != true || c["firstName"] != "Tia" || !slices.Equal(servicetest.Strings(t, c["tagIds"]), []string{vip}) {
			t.Fatalf("add by email = %s", res.Raw)
		}
		svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "tagged@example.com", "tagIds": []string{lead}, "action": "add"}).Expect(t, http.StatusOK)

		res = svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "TAGGED@example.com", "tagNames": []string{"VIP", "Nope"}, "action": "remove"}).Expect(t, http.StatusOK)
		if got := servicetest.Strings(t, res.Object(t, "contact")["tagIds"]); !slices.Equal(got, []string{lead}) {
			t.Fatalf("tags after remove = %v", got)
		}
		// The report has applied on every write (the action was applied to these tags), and a
		// remove says removed too.
		for _, member := range []string{"applied", "removed"} {
			report := res.Object(t, "tags")[member].(map[string]any)
			if !slices.Equal(servicetest.Strings(t, report["tagIds"]), []string{vip}) || !slices.Equal(servicetest.Strings(t, report["tagNames"]), []string{"VIP"}) {
				t.Fatalf("%s report of a remove = %v", member, report)
			}
		}
		// Removing a tag the contact does not have changes nothing and is not an error.
		svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "tagged@example.com", "tagIds": []string{vip}, "action": "remove"}).Expect(t, http.StatusOK)

		// remove needs an existing contact.
		svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "ghost@example.com", "tagIds": []string{vip}, "action": "remove"}).ExpectError(t, http.StatusNotFound)
		if list := svc.API.Get(t, "/api/v1/contacts?email=ghost@example.com", acc.Key).List(t, "contacts"); len(list) != 0 {
			t.Fatal("a remove created a contact")
		}
		for name, body := range map[string]any{
			"no tags":        map[string]any{"email": "x@example.com"},
			"empty tags":     map[string]any{"email": "x@example.com", "tagIds": []string{}},
			"bad action":     map[string]any{"email": "x@example.com", "tagIds": []string{vip}, "action": "toggle"},
			"no email":       map[string]any{"tagIds": []string{vip}},
			"invalid email":  map[string]any{"email": "nope", "tagIds": []string{vip}},
			"action not str": map[string]any{"email": "x@example.com", "tagIds": []string{vip}, "action": 1},
		} {
			t.Run(name, func(t *testing.T) {
				svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, body).ExpectError(t, http.StatusBadRequest)
			})
		}
		if list := svc.API.Get(t, "/api/v1/contacts?email=x@example.com", acc.Key).List(t, "contacts"); len(list) != 0 {
			t.Fatal("a refused tag request created a contact")
		}
	})
}

func TestTagContactByID(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		vip := svc.NewTag(t, acc.ID, "VIP")
		svc.NewTag(t, acc.ID, "Lead")
		id := upsert(t, svc, acc.Key, map[string]any{"email": "byid@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)

		res := svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagIds": []string{vip}, "tagNames": []string{"lead"}, "action": "add"}).Expect(t, http.StatusOK)
		if got := servicetest.Strings(t, res.Object(t, "contact")["tagIds"]); len(got) != 2 || res.Body["created"] != false {
			t.Fatalf("add by id = %s", res.Raw)
		}
		res = svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagIds": []string{vip}, "action": "remove"}).Expect(t, http.StatusOK)
		if got := servicetest.Strings(t, res.Object(t, "contact")["tagIds"]); len(got) != 1 || got[0] == vip {
			t.Fatalf("remove by id = %v", got)
		}
		svc.API.Post(t, "/api/v1/contacts/ct_aaaaaaaaaaaaaaaaaaaaaaaaaa/tags", acc.Key, map[string]any{"tagIds": []string{vip}}).ExpectError(t, http.StatusNotFound)
		svc.API.Post(t, "/api/v1/contacts/"+acc.ID+"/tags", acc.Key, map[string]any{"tagIds": []string{vip}}).ExpectError(t, http.StatusNotFound)
		svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"action": "add"}).ExpectError(t, http.StatusBadRequest)
	})
}

// email.send and campaign.enroll automations are recorded on the contact's history once per
// application of their tag, by any path.
func TestTagAutomationsRecordedOnce(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		svc.NewTag(t, acc.ID, "Welcome", map[string]any{"type": "email.send", "subject": "Hi", "body": "Welcome aboard"})
		svc.NewTag(t, acc.ID, "Onboard", map[string]any{"type": "campaign.enroll", "campaignId": "camp-1"},
			map[string]any{"type": "email.send", "subject": "Day 1", "body": "Start here"})

		// One request applying both tags runs each automation once.
		id := upsert(t, svc, acc.Key, map[string]any{"email": "auto@example.com", "tagNames": []string{"Welcome", "Onboard", "welcome"}}).
			Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		// Applying tags the contact already has runs nothing again, by either path.
		upsert(t, svc, acc.Key, map[string]any{"email": "auto@example.com", "tagNames": []string{"Welcome"}}).Expect(t, http.StatusOK)
		svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "auto@example.com", "tagNames": []string{"Onboard"}}).Expect(t, http.StatusOK)

		counts := historyTypes(t, svc, acc.ID, "contactId="+id)
		if counts["EmailQueued"] != 2 || counts["CampaignEnrolled"] != 1 || counts["TagApplied"] != 2 {
			t.Fatalf("history counts = %v", counts)
		}

		// Removed and applied again: the automations run again.
		svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagNames": []string{"Welcome"}, "action": "remove"}).Expect(t, http.StatusOK)
		svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagNames": []string{"Welcome"}}).Expect(t, http.StatusOK)
		counts = historyTypes(t, svc, acc.ID, "contactId="+id)
		if counts["EmailQueued"] != 3 || counts["TagRemoved"] != 1 || counts["TagApplied"] != 3 {
			t.Fatalf("history counts after re-apply = %v", counts)
		}
	})
}

// historyTypes counts the event types of an entity's history.
func historyTypes(t *testing.T, svc *servicetest.Service, accountID, query string) map[string]int {
	t.Helper()
	events := svc.Operator.Get(t, "/admin/v1/accounts/"+accountID+"/history?"+query, "").Expect(t, http.StatusOK).List(t, "events")
	counts := map[string]int{}
	for _, e := range events {
		counts[e["type"].(string)]++
	}
	return counts
}

func TestListTags(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		svc.NewTag(t, other.ID, "Other account")
		for _, tag := range []struct {
			name  string
			order int
		}{{"b-second", 1}, {"A-first", 1}, {"zero", 0}, {"last", 2}} {
			svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/tags", "", map[string]any{"name": tag.name, "order": tag.order}).Expect(t, http.StatusCreated)
		}
		res := svc.API.Get(t, "/api/v1/tags", acc.Key).Expect(t, http.StatusOK)
		tags := res.List(t, "tags")
		var names []string
		for _, tag := range tags {
			names = append(names, tag["name"].(string))
			if tag["id"] == nil || tag["createdAt"] == nil || tag["order"] == nil || len(tag) != 4 {
				t.Fatalf("tag = %v, want id, name, order, createdAt", tag)
			}
		}
		if !slices.Equal(names, []string{"zero", "A-first", "b-second", "last"}) {
			t.Fatalf("tags in order %v", names)
		}
		page := svc.API.Get(t, "/api/v1/tags?limit=3", acc.Key).Expect(t, http.StatusOK)
		next := svc.API.Get(t, "/api/v1/tags?limit=3&cursor="+page.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK).List(t, "tags")
		if len(page.List(t, "tags")) != 3 || len(next) != 1 || next[0]["name"] != "last" {
			t.Fatalf("paged tags = %v then %v", page.List(t, "tags"), next)
		}
	})
}
