package render

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"
)

// Events is the table of outbound events (webhooks.Events) as the documents list it.
type Events struct {
	Names   []string                 // every event, in the table's order
	Aliases []string                 // legacy names subscriptions accept; never sent
	Schema  func(name string) string // the schema of an event's envelope (webhooks.Schema)
}

// WithEvents rewrites the lists of outbound events of a document from the table: the enums of
// the EventName and EventNameOrAlias schemas and, in a document that has it, the oneOf of the
// WebhookEvent schema and its discriminator's mapping. Everything else of the source is kept
// byte for byte (comments, layout), so that the YAML stays the hand-written source it is; each
// list must be written in block style, one entry a line.
func WithEvents(source []byte, ev Events) ([]byte, error) {
	doc, err := parse(source)
	if err != nil {
		return nil, err
	}
	schemas := get(get(doc.root, "components"), "schemas")
	ref := func(name string) string { return "'#/components/schemas/" + ev.Schema(name) + "'" }
	var edits []edit
	add := func(where string, n *yaml.Node, required bool, lines func(indent string) []string) error {
		if n == nil {
			if required {
				return fmt.Errorf("render: the document has no %s", where)
			}
			return nil
		}
		e, err := editOf(where, n, lines)
		if err != nil {
			return err
		}
		edits = append(edits, e)
		return nil
	}
	enum := func(names []string) func(string) []string {
		return func(indent string) []string {
			out := make([]string, len(names))
			for i, n := range names {
				out[i] = indent + "- " + n
			}
			return out
		}
	}
	if err := add("EventName enum", get(get(schemas, "EventName"), "enum"), true, enum(ev.Names)); err != nil {
		return nil, err
	}
	if err := add("EventNameOrAlias enum", get(get(schemas, "EventNameOrAlias"), "enum"), true,
		enum(append(slices.Clone(ev.Names), ev.Aliases...))); err != nil {
		return nil, err
	}
	if webhookEvent := get(schemas, "WebhookEvent"); webhookEvent != nil {
		if err := add("WebhookEvent oneOf", get(webhookEvent, "oneOf"), true, func(indent string) []string {
			out := make([]string, len(ev.Names))
			for i, n := range ev.Names {
				out[i] = indent + "- {$ref: " + ref(n) + "}"
			}
			return out
		}); err != nil {
			return nil, err
		}
		if err := add("WebhookEvent discriminator mapping", get(get(webhookEvent, "discriminator"), "mapping"), true, func(indent string) []string {
			out := make([]string, len(ev.Names))
			for i, n := range ev.Names {
				out[i] = indent + n + ": " + ref(n)
			}
			return out
		}); err != nil {
			return nil, err
		}
	}
	lines := strings.Split(string(source), "\n")
	slices.SortFunc(edits, func(a, b edit) int { return b.first - a.first }) // bottom up: line numbers stay right
	for _, e := range edits {
		lines = slices.Concat(lines[:e.first-1], e.lines, lines[e.last:])
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// edit replaces the lines first to last (1-based, inclusive) of a source.
type edit struct {
	first, last int
	lines       []string
}

// editOf replaces a block sequence or mapping, one entry a line, with lines at its indentation.
func editOf(where string, n *yaml.Node, lines func(indent string) []string) (edit, error) {
	if (n.Kind != yaml.SequenceNode && n.Kind != yaml.MappingNode) || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
		return edit{}, fmt.Errorf("render: line %d: the %s must be a block list, one entry a line", n.Line, where)
	}
	first := n.Content[0]
	column := first.Column - 1 // a mapping's key starts the line
	if n.Kind == yaml.SequenceNode {
		column -= 2 // a sequence's item follows "- "
	}
	if column < 0 {
		return edit{}, fmt.Errorf("render: line %d: the %s is not indented as a block list", n.Line, where)
	}
	return edit{first: first.Line, last: lastLine(n), lines: lines(strings.Repeat(" ", column))}, nil
}

// lastLine is the last line a node spans.
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	return last
}
