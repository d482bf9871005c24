// Command gendocs writes what the service serves from the hand-written OpenAPI documents of
// api/openapi: first the lists of outbound events in integration.yaml and operator.yaml (the
// event enums, the oneOf of webhook bodies) from the table of outbound events (webhooks.Events),
// then integration.json and operator.json from their YAML, and llms-full.txt from
// integration.yaml and the prose of llms-full.txt.tmpl. `make generate` runs it (through the
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
		source, err := os.ReadFile(name + ".yaml")
		if err != nil {
			return err
		}
		listed, err := render.WithEvents(source, events)
		if err != nil {
			return fmt.Errorf("%s.yaml: %w", name, err)
		}
		if !bytes.Equal(listed, source) {
			if err := os.WriteFile(name+".yaml", listed, 0o644); err != nil {
				return err
			}
		}
		out, err := render.JSON(listed)
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
	return os.WriteFile("llms-full.txt", text, 0o644)
}
