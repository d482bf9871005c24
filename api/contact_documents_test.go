package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// TestAListedContactReadsAsItsOwn holds the contacts list, which serves the JSON the read model
// keeps for each contact (its document), to the single contact's answer, built from the row's
// columns: byte for byte, for contacts created, changed, tagged and untagged, with characters the
// encoder escapes. Rows written before documents were kept (NULL) are listed the same.
func TestAListedContactReadsAsItsOwn(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		svc.NewTag(t, acc.ID, "Lead")
		svc.NewTag(t, acc.ID, "<VIP> & Co")
		plan := svc.NewCustomField(t, acc.ID, "Plan")
		note := svc.NewCustomField(t, acc.ID, "Note")

		upsert(t, svc, acc.Key, map[string]any{"email": "plain@example.com"}).Expect(t, http.StatusOK)
		upsert(t, svc, acc.Key, map[string]any{"email": "zoe@example.com", "firstName": "Zoë <b>", "lastName": "O'Brien & \"Sons\"",
			"phone": "+33 1\u2028", "tagNames": []string{"<VIP> & Co", "Lead"}, "customFields": map[string]any{plan: "Pro", note: "a\tb </script>"}}).Expect(t, http.StatusOK)
		changed := upsert(t, svc, acc.Key, map[string]any{"email": "changed@example.com", "firstName": "Before", "tagNames": []string{"Lead"},
			"customFields": map[string]any{plan: "Basic"}}).Expect(t, http.StatusOK).Object(t, "contact")
		id := changed["id"].(string)
		upsert(t, svc, acc.Key, map[string]any{"email": "changed@example.com", "firstName": "After", "customFields": map[string]any{plan: ""}}).Expect(t, http.StatusOK)
		svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagIds": []string{changed["tagIds"].([]any)[0].(string)}, "action": "remove"}).Expect(t, http.StatusOK)

		listed := listedContacts(t, svc, acc.Key)
		if len(listed) != 3 {
			t.Fatalf("listed %d contacts, want 3", len(listed))
		}
		for _, doc := range listed {
			if own := ownContact(t, svc, acc.Key, doc); !bytes.Equal(doc, own) {
				t.Errorf("listed as\n%s\nread on its own as\n%s", doc, own)
			}
		}

		// Rows from before migration 11 have no document: the list shows them from their columns.
		if _, err := svc.App.DB().Write.ExecContext(context.Background(), `UPDATE contacts SET document = NULL WHERE account_id = $1`, acc.ID); err != nil {
			t.Fatal(err)
		}
		again := listedContacts(t, svc, acc.Key)
		if len(again) != len(listed) {
			t.Fatalf("listed %d contacts without documents, want %d", len(again), len(listed))
		}
		for i := range listed {
			if !bytes.Equal(again[i], listed[i]) {
				t.Errorf("without its document listed as\n%s\nwith it as\n%s", again[i], listed[i])
			}
		}
	})
}

// listedContacts returns the contacts of the account's first page as the list's body has them.
func listedContacts(t *testing.T, svc *servicetest.Service, key string) []json.RawMessage {
	t.Helper()
	var page struct {
		Contacts []json.RawMessage `json:"contacts"`
	}
	if err := json.Unmarshal(svc.API.Get(t, "/api/v1/contacts", key).Expect(t, http.StatusOK).Raw, &page); err != nil {
		t.Fatal(err)
	}
	return page.Contacts
}

// ownContact returns the contact of a listed one as GET /api/v1/contacts/{id} has it.
func ownContact(t *testing.T, svc *servicetest.Service, key string, listed json.RawMessage) json.RawMessage {
	t.Helper()
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(listed, &c); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Contact json.RawMessage `json:"contact"`
	}
	if err := json.Unmarshal(svc.API.Get(t, "/api/v1/contacts/"+c.ID, key).Expect(t, http.StatusOK).Raw, &body); err != nil {
		t.Fatal(err)
	}
	return body.Contact
}
