package api_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// Emails compare by Unicode's canonical caseless match (NFD, full case folding, NFC:
// domain.EmailKey), wherever they are compared: two addresses that read the same, in whatever
// encoding or case, are one contact and one customer, and every look-up by email finds them.
// Before, a plain lower-case merged the KELVIN SIGN with "k" and U+212B with "å", but not "ς"
// with "σ", nor a decomposed "å" with the composed one.
func TestEmailsCompareByCanonicalCaselessMatch(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		svc.NewTag(t, acc.ID, "VIP")
		product := svc.NewProduct(t, acc.ID, simpleProduct("Book"))
		for _, same := range [][]string{
			{"kate@example.com", "\u212Aate@example.com"},                             // KELVIN SIGN
			{"\u00E5sa@example.com", "\u212Bsa@example.com", "a\u030Asa@example.com"}, // å, ANGSTROM SIGN, a + ring above
			{"\u03C3\u03BF\u03C6\u03B9\u03B1\u03C2@example.com", "\u03A3\u039F\u03A6\u0399\u0391\u03A3@example.com", "\u03C3\u03BF\u03C6\u03B9\u03B1\u03C3@example.com"}, // σοφιας, ΣΟΦΙΑΣ, final sigma or not
			{"stra\u00DFe@example.com", "STRASSE@example.com"},                           // ß folds to ss
			{"ren\u00E9@example.com", "rene\u0301@example.com", "REN\u00C9@EXAMPLE.COM"}, // é composed or not
		} {
			first := upsert(t, svc, acc.Key, map[string]any{"email": same[0]}).Expect(t, http.StatusOK)
			id := first.Object(t, "contact")["id"].(string)
			if first.Body["created"] != true {
				t.Fatalf("%+q: first upsert did not create: %s", same[0], first.Raw)
			}
			pay := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": same[0]}).Expect(t, http.StatusCreated)
			customer := pay.Object(t, "customer")["id"].(string)
			for _, other := range same[1:] {
				res := upsert(t, svc, acc.Key, map[string]any{"email": other}).Expect(t, http.StatusOK)
				if res.Body["created"] != false || res.Object(t, "contact")["id"] != id {
					t.Errorf("%+q is another contact than %+q: %s", other, same[0], res.Raw)
				}
				tagged := svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": other, "tagNames": []string{"VIP"}}).Expect(t, http.StatusOK)
				if tagged.Object(t, "contact")["id"] != id {
					t.Errorf("tagging %+q reached %s, want %s", other, tagged.Raw, id)
				}
				if found := contactByEmail(t, svc, acc.Key, other); found == nil || found["id"] != id {
					t.Errorf("contacts?email=%+q = %v, want %s", other, found, id)
				}
				again := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": other}).Expect(t, http.StatusCreated)
				if again.Object(t, "customer")["id"] != customer || again.Body["contactId"] != nil && again.Body["contactId"] != id {
					t.Errorf("a purchase by %+q is another customer: %s", other, again.Raw)
				}
				if list := svc.API.Get(t, "/api/v1/customers?email="+url.QueryEscape(other), acc.Key).Expect(t, http.StatusOK).List(t, "customers"); len(list) != 1 || list[0]["id"] != customer {
					t.Errorf("customers?email=%+q = %v, want %s", other, list, customer)
				}
				events := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?email="+url.QueryEscape(other), "").Expect(t, http.StatusOK).List(t, "events")
				if len(events) == 0 || events[0]["streamId"] != nil && events[0]["streamId"] != id {
					t.Errorf("history?email=%+q = %v", other, events)
				}
			}
		}
	})
}

// A contact created when emails compared by a plain lower-case is named by that key
// (domain.LegacyContactIDFor). For the few addresses whose key the normalisation changed, it
// stays the contact of its address: commands, the lists' email filters and the history by email
// find it, and it is not merged into a contact of an address that now compares equal.
func TestContactsStoredUnderTheOldEmailKeyStayReachable(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		svc.NewTag(t, acc.ID, "Old")
		ctx := context.Background()
		const oldEmail = "\u03C3\u03BF\u03C6\u03B9\u03B1\u03C2@example.com" // ends in ς: lower-cased, it stays ς
		legacyID, changed := domain.LegacyContactIDFor(acc.ID, oldEmail)
		if !changed || legacyID == domain.ContactIDFor(acc.ID, oldEmail) {
			t.Fatal("the normalisation does not change this address's key")
		}
		// The contact as the old code recorded it: its stream named by the lower-cased address.
		sofia := "Sofia"
		contact := domain.ContactStream(legacyID)
		if _, err := contact.Upsert(acc.ID, oldEmail, domain.ContactProfile{FirstName: &sofia}); err != nil {
			t.Fatal(err)
		}
		pos, err := svc.App.Store().Append(ctx, domain.Metadata{AccountID: acc.ID, Actor: "test"}, domain.StreamAppend{StreamID: legacyID, Events: contact.Changes()})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
			t.Fatal(err)
		}

		res := upsert(t, svc, acc.Key, map[string]any{"email": oldEmail, "lastName": "Old"}).Expect(t, http.StatusOK)
		if res.Body["created"] != false || res.Object(t, "contact")["id"] != legacyID || res.Object(t, "contact")["firstName"] != "Sofia" {
			t.Fatalf("upsert of the old contact's address = %s, want contact %s", res.Raw, legacyID)
		}
		tagged := svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": oldEmail, "tagNames": []string{"Old"}}).Expect(t, http.StatusOK)
		if tagged.Object(t, "contact")["id"] != legacyID {
			t.Fatalf("tag by email reached %s", tagged.Raw)
		}
		if found := contactByEmail(t, svc, acc.Key, oldEmail); found == nil || found["id"] != legacyID {
			t.Fatalf("contacts?email= found %v", found)
		}
		events := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?email="+url.QueryEscape(oldEmail), "").Expect(t, http.StatusOK).List(t, "events")
		if len(events) != 3 { // created, updated, tagged
			t.Fatalf("history by email = %v", events)
		}

		// The address with a plain σ, equal under the new rule, was another contact under the old
		// one and had none yet: it gets its own contact, the two are not merged, and the
		// read model holds both (its email keys stay unique).
		const newEmail = "\u03C3\u03BF\u03C6\u03B9\u03B1\u03C3@example.com"
		other := upsert(t, svc, acc.Key, map[string]any{"email": newEmail}).Expect(t, http.StatusOK)
		if other.Body["created"] != true || other.Object(t, "contact")["id"] == legacyID {
			t.Fatalf("upsert of %+q = %s", newEmail, other.Raw)
		}
		again := upsert(t, svc, acc.Key, map[string]any{"email": oldEmail}).Expect(t, http.StatusOK)
		if again.Object(t, "contact")["id"] != legacyID {
			t.Fatalf("the old contact's address now reaches %s", again.Raw)
		}
		// The filter by the old contact's address lists both, which compare equal to it; the
		// filter by the other address lists its own contact (the old one's key is not its).
		if list := svc.API.Get(t, "/api/v1/contacts?email="+url.QueryEscape(oldEmail), acc.Key).Expect(t, http.StatusOK).List(t, "contacts"); len(list) != 2 {
			t.Fatalf("contacts?email=%+q lists %v, want both contacts", oldEmail, list)
		}
		if found := contactByEmail(t, svc, acc.Key, newEmail); found == nil || found["id"] != other.Object(t, "contact")["id"] {
			t.Fatalf("contacts?email=%+q found %v", newEmail, found)
		}
	})
}
