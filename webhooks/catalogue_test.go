package webhooks

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/api/openapi"
	"github.com/funnelhq/funnel/domain"
)

// Every event of the table is in the integration document: its webhook, and its envelope
// schema (<Name>Event) of that type, whose data is the schema the payload's Go type is generated
// from; and it comes from at least one domain event. And every envelope schema of the document
// (a `type` of one value beside `data`) is an event of the table. `make generate` writes the
// document's event lists from the table (api/openapi tests fail while they lag, and while a
// webhook is not the table's): this checks what is written by hand, the schemas.
func TestEveryEventIsInTheDocument(t *testing.T) {
	var doc struct {
		Webhooks   map[string]any `json:"webhooks"`
		Components struct {
			Schemas map[string]struct {
				Required   []string `json:"required"`
				Properties map[string]struct {
					Ref  string `json:"$ref"`
					Enum []any  `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Integration(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(Events.events) == 0 {
		t.Fatal("the table is empty")
	}
	for name, schema := range doc.Components.Schemas {
		typ, hasData := schema.Properties["type"].Enum, schema.Properties["data"].Ref != ""
		if len(typ) != 1 || !hasData {
			continue // not an envelope
		}
		if event, _ := typ[0].(string); !slices.Contains(Events.Names(), event) || Schema(event) != name {
			t.Errorf("the envelope schema %s (type %v) of integration.yaml is no event of the table (webhooks/events.go)", name, typ[0])
		}
	}
	for _, e := range Events.events {
		if _, ok := doc.Webhooks[e.name]; !ok {
			t.Errorf("%s: no webhook in integration.yaml", e.name)
		}
		envelope, ok := doc.Components.Schemas[Schema(e.name)]
		if !ok {
			t.Errorf("%s: no schema %s in integration.yaml", e.name, Schema(e.name))
			continue
		}
		if typ := envelope.Properties["type"].Enum; len(typ) != 1 || typ[0] != e.name {
			t.Errorf("%s: %s.type is %v", e.name, Schema(e.name), typ)
		}
		data := strings.TrimPrefix(envelope.Properties["data"].Ref, "#/components/schemas/")
		if data != e.payloadType.Name() || e.payloadType.PkgPath() != "github.com/funnelhq/funnel/api/wire" {
			t.Errorf("%s: the payload is a %v, the document's data is %s (its generated type in api/wire)", e.name, e.payloadType, data)
		}
		if len(e.sources) == 0 {
			t.Errorf("%s: no domain event produces it", e.name)
		}
		// The sample is of the payload type, every required member present.
		b, err := json.Marshal(e.sample(time.Now()))
		if err != nil {
			t.Fatalf("%s sample: %v", e.name, err)
		}
		var members map[string]any
		if err := json.Unmarshal(b, &members); err != nil {
			t.Fatal(err)
		}
		for _, m := range doc.Components.Schemas[data].Required {
			if _, ok := members[m]; !ok {
				t.Errorf("%s: the sample lacks %s", e.name, m)
			}
		}
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
		"a name twice": {define("form.submitted", domain.ScopeFormsRead, nil, formSubmittedSample),
			define("form.submitted", domain.ScopeFormsRead, nil, formSubmittedSample)},
		"an alias that is a name": {define("checkout.purchased", domain.ScopeCheckoutRead, nil, purchasedSample),
			define("checkout.rebilled", domain.ScopeCheckoutRead, nil, rebilledSample).alsoKnownAs("checkout.purchased")},
		"a domain event producing two": {define("form.submitted", domain.ScopeFormsRead, nil, formSubmittedSample, fromChecked(formSubmittedData)),
			define("form.copy", domain.ScopeFormsRead, nil, formSubmittedSample, fromChecked(formSubmittedData))},
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

// An event name is its envelope schema in CamelCase.
func TestSchemaNames(t *testing.T) {
	if got := Schema("checkout.subscription_cancel_scheduled"); got != "CheckoutSubscriptionCancelScheduledEvent" {
		t.Fatalf("Schema = %s", got)
	}
}
