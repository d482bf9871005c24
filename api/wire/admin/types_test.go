package admin

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/funnelhq/funnel/api/wire"
)

// The generator's configuration (oapi-codegen.yaml, overlay.yaml) makes a number a float64, a
// time a wire.DateTime and a history event's data the stored JSON: each shows in what an answer
// writes.
func TestGeneratedTypesWriteNumbersTimesAndEventDataAsTheContractSays(t *testing.T) {
	var answer AnswerValue
	if err := answer.FromAnswerValue1(1234567.891); err != nil { // float32 would write 1234567.9
		t.Fatal(err)
	}
	event := HistoryEvent{
		Data:       json.RawMessage(`{"b":1,"a":9007199254740993}`), // as recorded: order and digits kept
		OccurredAt: wire.At(time.Date(2026, 11, 26, 23, 5, 7, 123456789, time.FixedZone("CET", 3600))),
		Metadata:   EventMetadata{AccountId: "acc_1", Actor: "operator"},
	}
	b, err := json.Marshal(struct {
		Answer AnswerValue  `json:"answer"`
		Event  HistoryEvent `json:"event"`
	}{answer, event})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"answer":1234567.891,"event":{"data":{"b":1,"a":9007199254740993},"eventId":"",` +
		`"metadata":{"accountId":"acc_1","actor":"operator"},"occurredAt":"2026-11-26T22:05:07.123Z",` +
		`"position":0,"schemaVersion":0,"streamId":"","type":"","version":0}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

// A schema of operator.yaml that overlay.yaml makes an integration API type (x-go-type: wire.X)
// must be that type's schema in integration.yaml, descriptions aside: one mapping serves both
// APIs (api/views), so the two documents may not drift apart.
func TestSharedSchemasAreTheSameInBothDocuments(t *testing.T) {
	overlay, err := os.ReadFile("overlay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		Actions []struct {
			Target string         `yaml:"target"`
			Update map[string]any `yaml:"update"`
		} `yaml:"actions"`
	}
	if err := yaml.Unmarshal(overlay, &o); err != nil {
		t.Fatal(err)
	}
	integration, operator := documentSchemas(t, "integration"), documentSchemas(t, "operator")
	shared := 0
	for _, a := range o.Actions {
		name, ok := strings.CutPrefix(a.Target, "$.components.schemas.")
		goType, _ := a.Update["x-go-type"].(string)
		if !ok || strings.Contains(name, ".") || !strings.HasPrefix(goType, "wire.") {
			continue
		}
		shared++
		if name != strings.TrimPrefix(goType, "wire.") {
			t.Errorf("%s is made %s: a shared schema keeps its name", name, goType)
		}
		if !reflect.DeepEqual(withoutDescriptions(integration[name]), withoutDescriptions(operator[name])) {
			t.Errorf("the schema %s differs between integration.yaml and operator.yaml, though both answer %s", name, goType)
		}
	}
	if shared == 0 {
		t.Fatal("overlay.yaml shares no schema: the test reads it wrong")
	}
}

// The operator's CreateWebhookRequest must be the integration API's
// CreateWebhookSubscriptionRequest and kind, descriptions aside: httpapi.Subscriptions reads both
// APIs' bodies of a new subscription as the former, so a member that only the integration
// document gained would be dropped.
func TestWebhookBodyOfTheOperatorIsTheIntegrationOnesAndKind(t *testing.T) {
	integration, operator := documentSchemas(t, "integration"), documentSchemas(t, "operator")
	theirs, _ := withoutDescriptions(integration["CreateWebhookSubscriptionRequest"]).(map[string]any)
	ours, _ := withoutDescriptions(operator["CreateWebhookRequest"]).(map[string]any)
	if theirs == nil || ours == nil {
		t.Fatal("no CreateWebhookSubscriptionRequest in integration.json or no CreateWebhookRequest in operator.json")
	}
	ourProperties, _ := ours["properties"].(map[string]any)
	if _, ok := ourProperties["kind"]; !ok {
		t.Fatal("CreateWebhookRequest has no kind")
	}
	withoutKind := maps.Clone(ourProperties)
	delete(withoutKind, "kind")
	ours = maps.Clone(ours)
	ours["properties"] = withoutKind
	if !reflect.DeepEqual(theirs, ours) {
		t.Errorf("CreateWebhookRequest without kind differs from CreateWebhookSubscriptionRequest:\n%v\n%v", ours, theirs)
	}
	for _, name := range []string{"EventNameOrAlias", "FilterIds"} {
		if !reflect.DeepEqual(withoutDescriptions(integration[name]), withoutDescriptions(operator[name])) {
			t.Errorf("the schema %s differs between integration.yaml and operator.yaml", name)
		}
	}
}

// documentSchemas are the schemas of api/openapi/<name>.json by name.
func documentSchemas(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../openapi/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas
}

// withoutDescriptions is a schema without its descriptions, which may differ between documents.
func withoutDescriptions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if k != "description" {
				out[k] = withoutDescriptions(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutDescriptions(e)
		}
		return out
	}
	return v
}
