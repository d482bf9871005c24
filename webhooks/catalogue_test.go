package webhooks

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/domain"
)

// The table lists the contract's event types in its order.
func TestEventsAreTheContractsInItsOrder(t *testing.T) {
	want := []string{"form.submitted", "scheduling.booked", "checkout.purchased", "checkout.rebilled", "checkout.refunded",
		"checkout.subscription_cancel_scheduled", "checkout.subscription_cancelled"}
	if got := Events.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
}

// A subscription's event types: the legacy alias stands for its type, repeats are dropped, an
// unknown name is refused as invalid with the name in the message.
func TestCanonicalEventNames(t *testing.T) {
	got, err := Events.Canonical([]string{"checkout.paid", "form.submitted", "checkout.purchased", "form.submitted"})
	if err != nil || !reflect.DeepEqual(got, []string{"checkout.purchased", "form.submitted"}) {
		t.Fatalf("Canonical = %v, %v", got, err)
	}
	_, err = Events.Canonical([]string{"form.submitted", "contact.created"})
	if domain.KindOf(err) != domain.KindInvalid || err.Error() != `events: unknown event type "contact.created"` {
		t.Fatalf("an unknown name: %v", err)
	}
	if got, err := Events.Canonical(nil); err != nil || len(got) != 0 {
		t.Fatalf("no names = %v, %v; the subscription refuses an empty list itself", got, err)
	}
}

// A mistake in the table stops the package from loading rather than misrouting events.
func TestTheTableRefusesDuplicates(t *testing.T) {
	for name, table := range map[string][]outboundEvent{
		"a name twice": {define("form.submitted", nil, formSubmittedSample), define("form.submitted", nil, formSubmittedSample)},
		"an alias that is a name": {define("checkout.purchased", nil, purchasedSample),
			define("checkout.rebilled", nil, rebilledSample).alsoKnownAs("checkout.purchased")},
		"a domain event producing two": {define("form.submitted", nil, formSubmittedSample, from(formSubmittedData)),
			define("form.copy", nil, formSubmittedSample, from(formSubmittedData))},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: newCatalogue accepted it", name)
				}
			}()
			newCatalogue(table...)
		}()
	}
}

// Made-up sample envelopes carry UUID-shaped ids, like a real envelope's (a domain event's id),
// one per type, and never a real one (those are version 7).
func TestSampleEnvelopeIDs(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range Events.Names() {
		id, err := uuid.Parse(sampleID(name))
		if err != nil || id.Version() == 7 || seen[id.String()] {
			t.Fatalf("sample id of %s = %v, %v", name, id, err)
		}
		seen[id.String()] = true
		if sampleID(name) != id.String() {
			t.Fatalf("sample id of %s is not stable", name)
		}
	}
}

// The checkout samples are section 6's tables member for member (before its first sale, they
// are all an integrator of an account sees of those events).
func TestCheckoutSamplesFollowTheContract(t *testing.T) {
	payment := []string{"contact", "customer", "isRebill", "pricing", "product", "transaction"}
	cancellation := append([]string{"subscription"}, payment...)
	for name, want := range map[string]map[string][]string{
		"checkout.purchased": {"": append([]string{"activation"}, payment...), "activation": {"expiresAt", "token", "url"},
			"product": {"id", "internalName", "name"}, "transaction": {"amount", "currency", "id", "processor", "status", "subscriptionId", "txnId"},
			"pricing":  {"bumpIndices", "bumps", "pricingTierId", "tierIndex", "tierName"},
			"customer": {"contactId", "email", "name"}, "contact": {"contactId", "email", "firstName", "lastName"}},
		"checkout.rebilled": {"": payment},
		"checkout.refunded": {"": append([]string{"refund"}, payment...), "refund": {"amountCents", "fullyRefunded", "refundedAt"}},
		"checkout.subscription_cancel_scheduled": {"": cancellation,
			"subscription": {"cancelAtPeriodEnd", "currentPeriodEnd", "id", "processor", "scheduledAt", "status"}},
		"checkout.subscription_cancelled": {"": cancellation, "subscription": {"cancelledAt", "id", "processor", "status"}},
	} {
		event, _ := Events.lookup(name)
		b, err := json.Marshal(event.sample(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		if err := json.Unmarshal(b, &data); err != nil {
			t.Fatal(err)
		}
		for member, members := range want {
			obj := data
			if member != "" {
				obj, _ = data[member].(map[string]any)
			}
			got := make([]string, 0, len(obj))
			for k := range obj {
				got = append(got, k)
			}
			sort.Strings(got)
			sort.Strings(members)
			if !reflect.DeepEqual(got, members) {
				t.Errorf("%s data.%s members = %v, want %v", name, member, got, members)
			}
		}
	}
}
