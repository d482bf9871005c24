// Command gendocs writes what the service serves from the hand-written OpenAPI documents of
// api/openapi: first the parts of each YAML source that Go tables own (the ErrorCode schema from
// domain.ErrorCodes, the one list of error codes; the event enums and the oneOf of webhook bodies
// from the table of outbound events, webhooks.Events), then integration.json and operator.json
// from their YAML, llms-full.txt from integration.yaml and the prose of llms-full.txt.tmpl, and
// the generated parts of docs/webhooks.md (the table of events) and docs/operator-api.md (the
// index of routes).
// `make generate` runs it (through the
// go:generate line of api/openapi/openapi.go) in api/openapi.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/funnelhq/funnel/api/openapi/internal/render"
	"github.com/funnelhq/funnel/webhooks"
)

func main() {
	if err := generate(); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func generate() error {
	events := render.Events{Names: webhooks.Events.Names(), Aliases: webhooks.Events.Aliases(), Schema: webhooks.Schema}
	for _, name := range []string{"integration", "operator"} {
		written, err := os.ReadFile(name + ".yaml")
		if err != nil {
			return err
		}
		coded, err := render.WithErrorCodes(written)
		if err != nil {
			return fmt.Errorf("%s.yaml: %w", name, err)
		}
		source, err := render.WithEvents(coded, events)
		if err != nil {
			return fmt.Errorf("%s.yaml: %w", name, err)
		}
		if !bytes.Equal(source, written) {
			if err := os.WriteFile(name+".yaml", source, 0o644); err != nil {
				return err
			}
		}
		out, err := render.JSON(source)
		if err != nil {
			return fmt.Errorf("%s.yaml: %w", name, err)
		}
		if err := os.WriteFile(name+".json", out, 0o644); err != nil {
			return err
		}
	}
	integration, err := os.ReadFile("integration.yaml")
	if err != nil {
		return err
	}
	prose, err := os.ReadFile("llms-full.txt.tmpl")
	if err != nil {
		return err
	}
	text, err := render.LLMs(integration, prose)
	if err != nil {
		return err
	}
	if err := os.WriteFile("llms-full.txt", text, 0o644); err != nil {
		return err
	}
	if err := writeEventTable(integration); err != nil {
		return err
	}
	return writeRouteIndex()
}

// routesPage is the page of docs that indexes the operator API's routes, from api/openapi.
const routesPage = "../../docs/operator-api.md"

// writeRouteIndex writes the index of routes of docs/operator-api.md from operator.yaml.
func writeRouteIndex() error {
	operator, err := os.ReadFile("operator.yaml")
	if err != nil {
		return err
	}
	page, err := os.ReadFile(routesPage)
	if err != nil {
		return err
	}
	out, err := render.WithRouteIndex(page, operator)
	if err != nil {
		return fmt.Errorf("%s: %w", routesPage, err)
	}
	if bytes.Equal(out, page) {
		return nil
	}
	return os.WriteFile(routesPage, out, 0o644)
}

// eventsPage is the page of docs that lists the outbound events, from api/openapi.
const eventsPage = "../../docs/webhooks.md"

// writeEventTable writes the table of outbound events of docs/webhooks.md.
func writeEventTable(integration []byte) error {
	page, err := os.ReadFile(eventsPage)
	if err != nil {
		return err
	}
	out, err := render.WithEventTable(page, integration, webhooks.Events.Docs())
	if err != nil {
		return fmt.Errorf("%s: %w", eventsPage, err)
	}
	if bytes.Equal(out, page) {
		return nil
	}
	return os.WriteFile(eventsPage, out, 0o644)
}
