package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/funnelhq/funnel/api/openapi"
	"github.com/funnelhq/funnel/api/openapi/internal/render"
	"github.com/funnelhq/funnel/webhooks"
)

// documents are the served documents and their sources.
var documents = []struct {
	name   string
	source string
	served []byte
}{
	{"integration", "integration.yaml", openapi.Integration()},
	{"operator", "operator.yaml", openapi.Operator()},
}

// Both documents are valid OpenAPI 3.1, their examples, defaults and formats included, every
// error reported.
func TestDocumentsAreValidOpenAPI31(t *testing.T) {
	for _, d := range documents {
		t.Run(d.name, func(t *testing.T) {
			doc := load(t, d.served)
			if !doc.IsOpenAPI31OrLater() || doc.OpenAPI != "3.1.0" {
				t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
			}
			err := doc.Validate(context.Background(), openapi3.EnableMultiError(), openapi3.EnableExamplesValidation(),
				openapi3.EnableSchemaDefaultsValidation(), openapi3.EnableSchemaFormatValidation(), openapi3.EnableSchemaPatternValidation())
			if me, ok := err.(openapi3.MultiError); ok {
				for _, e := range me {
					t.Error(e)
				}
			} else if err != nil {
				t.Error(err)
			}
		})
	}
}

// What the service serves is what `make generate` makes of the sources today: running it
// again would change nothing.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	for _, d := range documents {
		withCodes, err := render.WithErrorCodes(read(t, d.source))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(withCodes, read(t, d.source)) {
			t.Errorf("the ErrorCode schema of %s is not domain.ErrorCodes: run `make generate`", d.source)
		}
		want, err := render.JSON(read(t, d.source))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.served, want) {
			t.Errorf("%s.json is not what %s renders to: run `make generate`", d.name, d.source)
		}
	}
	want, err := render.LLMs(read(t, "integration.yaml"), read(t, "llms-full.txt.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(openapi.LLMsFull(), want) {
		t.Error("llms-full.txt is not what integration.yaml and llms-full.txt.tmpl render to: run `make generate`")
	}
	if strings.Contains(string(want), "<no value>") {
		t.Error("llms-full.txt names a part the renderer does not make")
	}
}

// /llms-full.txt shows every operation of the integration document, each webhook and each
// named schema.
func TestLLMsFullShowsTheWholeDocument(t *testing.T) {
	doc := load(t, openapi.Integration())
	text := string(openapi.LLMsFull())
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !strings.Contains(text, "\n"+method+" "+path+"  (") {
				t.Errorf("llms-full.txt does not show %s %s", method, path)
			}
		}
	}
	for name := range doc.Webhooks {
		if !strings.Contains(text, "\n"+name+"\n") {
			t.Errorf("llms-full.txt does not show the webhook %s", name)
		}
	}
	for name := range doc.Components.Schemas {
		if !strings.Contains(text, "\n"+name+": ") {
			t.Errorf("llms-full.txt does not show the schema %s", name)
		}
	}
}

// A client generator gets a named type for every body and a name for every operation: each
// operation has a unique operationId, and each JSON request and response body, and each
// webhook body, is a reference to a named component schema rather than an inline schema.
func TestEveryOperationIsNamedAndEveryBodyIsAComponent(t *testing.T) {
	for _, d := range documents {
		t.Run(d.name, func(t *testing.T) {
			doc := load(t, d.served)
			ids := map[string]string{}
			check := func(where string, op *openapi3.Operation) {
				if op.OperationID == "" {
					t.Errorf("%s has no operationId", where)
				} else if other, dup := ids[op.OperationID]; dup {
					t.Errorf("%s and %s share the operationId %s", where, other, op.OperationID)
				}
				ids[op.OperationID] = where
				if op.RequestBody != nil {
					for mime, media := range op.RequestBody.Value.Content {
						if media.Schema == nil || media.Schema.Ref == "" {
							t.Errorf("%s: the %s request body is not a named schema", where, mime)
						}
					}
				}
				for status, resp := range op.Responses.Map() {
					for mime, media := range resp.Value.Content {
						if mime == "application/json" && (media.Schema == nil || media.Schema.Ref == "") {
							t.Errorf("%s: the %s answer is not a named schema", where, status)
						}
					}
				}
			}
			for path, item := range doc.Paths.Map() {
				for method, op := range item.Operations() {
					check(method+" "+path, op)
				}
			}
			for name, item := range doc.Webhooks {
				for method, op := range item.Operations() {
					check("webhook "+name+" "+method, op)
				}
			}
		})
	}
}

// The document's webhooks are the outbound event types of the table (webhooks.Events), each
// with its POST, and no other.
func TestWebhooksAreTheOutboundEvents(t *testing.T) {
	doc := load(t, openapi.Integration())
	names := webhooks.Events.Names()
	for _, name := range names {
		if doc.Webhooks[name] == nil || doc.Webhooks[name].Post == nil {
			t.Errorf("no webhook %s in integration.yaml", name)
		}
	}
	for name := range doc.Webhooks {
		if !slices.Contains(names, name) {
			t.Errorf("the webhook %s is not in the table of outbound events (webhooks/events.go)", name)
		}
	}
}

// tableEvents is the table of outbound events as the documents list it.
var tableEvents = render.Events{Names: webhooks.Events.Names(), Aliases: webhooks.Events.Aliases(), Schema: webhooks.Schema}

// The documents' lists of outbound events (the event enums of both documents, the oneOf of
// webhook bodies and its discriminator) are what `make generate` writes from the table.
func TestDocumentsListTheTablesEvents(t *testing.T) {
	for _, d := range documents {
		source := read(t, d.source)
		want, err := render.WithEvents(source, tableEvents)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(source, want) {
			t.Errorf("%s lists other outbound events than webhooks/events.go: run `make generate`", d.source)
		}
	}
}

// The table of outbound events in docs/webhooks.md is what `make generate` writes from the
// catalogue and the webhooks' summaries.
func TestDocsListTheTablesEvents(t *testing.T) {
	page := read(t, "../../docs/webhooks.md")
	want, err := render.WithEventTable(page, read(t, "integration.yaml"), webhooks.Events.Docs())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, want) {
		t.Error("docs/webhooks.md lists other outbound events than webhooks/events.go: run `make generate`")
	}
}

// The index of routes in docs/operator-api.md is what `make generate` writes from operator.yaml.
func TestDocsIndexEveryOperatorRoute(t *testing.T) {
	page := read(t, "../../docs/operator-api.md")
	want, err := render.WithRouteIndex(page, read(t, "operator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, want) {
		t.Error("docs/operator-api.md indexes other routes than operator.yaml: run `make generate`")
	}
}

// An event added to the table reaches every list of both documents, in the table's order, and
// nothing else of the source changes.
func TestANewEventReachesEveryList(t *testing.T) {
	more := tableEvents
	more.Names = append(slices.Clone(more.Names), "checkout.subscription_paused")
	for _, d := range documents {
		source := read(t, d.source)
		listed, err := render.WithEvents(source, more)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Count(string(listed), "\n"), strings.Count(string(source), "\n"); got <= want {
			t.Errorf("%s: %d lines, the source has %d", d.source, got, want)
		}
		out, err := render.JSON(listed)
		if err != nil {
			t.Fatal(err)
		}
		// The new event's envelope schema is not written: read the JSON as it is, unresolved.
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Enum          []any               `json:"enum"`
					OneOf         []map[string]string `json:"oneOf"`
					Discriminator struct {
						Mapping map[string]string `json:"mapping"`
					} `json:"discriminator"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		schemas := doc.Components.Schemas
		strs := func(list []string) []any {
			out := make([]any, len(list))
			for i, s := range list {
				out[i] = s
			}
			return out
		}
		if e := schemas["EventName"].Enum; !slices.Equal(e, strs(more.Names)) {
			t.Errorf("%s: EventName enum %v", d.source, e)
		}
		if e := schemas["EventNameOrAlias"].Enum; !slices.Equal(e, strs(append(slices.Clone(more.Names), more.Aliases...))) {
			t.Errorf("%s: EventNameOrAlias enum %v", d.source, e)
		}
		if w, ok := schemas["WebhookEvent"]; ok {
			const ref = "#/components/schemas/CheckoutSubscriptionPausedEvent"
			if len(w.OneOf) != len(more.Names) || w.OneOf[len(w.OneOf)-1]["$ref"] != ref {
				t.Errorf("%s: WebhookEvent oneOf %v", d.source, w.OneOf)
			}
			if m := w.Discriminator.Mapping["checkout.subscription_paused"]; m != ref {
				t.Errorf("%s: the discriminator maps the new event to %q", d.source, m)
			}
		}
	}
}

func load(t *testing.T, spec []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return doc
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
