package render

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/funnelhq/funnel/webhooks"
)

// The markers around the table of outbound events in docs/webhooks.md: what lies between them
// is written by `make generate`.
const (
	eventTableStart = "<!-- The table of outbound events: written by `make generate` from webhooks.Events and the summaries of integration.yaml's webhooks. -->"
	eventTableEnd   = "<!-- End of the table of outbound events. -->"
)

// WithEventTable rewrites the table of outbound events between its markers in a Markdown page:
// one line an event, in the table's order, with the summary of its webhook in integrationYAML,
// the scope that reads its data (real samples), the filters that apply to it and the domain
// events it comes from. The rest of the page is kept byte for byte.
func WithEventTable(page, integrationYAML []byte, rows []webhooks.EventDoc) ([]byte, error) {
	doc, err := parse(integrationYAML)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("| Event | When | Read scope | Filters | From the domain events |\n| --- | --- | --- | --- | --- |\n")
	webhooks := get(doc.root, "webhooks")
	for _, r := range rows {
		summary := text(get(get(webhooks, r.Name), "post"), "summary")
		if summary == "" {
			return nil, fmt.Errorf("render: the webhook %s has no summary in integration.yaml", r.Name)
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n", r.Name, summary, r.ReadScope, codes(r.Filters), codes(r.Sources))
	}
	return between(page, eventTableStart, eventTableEnd, b.String())
}

// between replaces what lies between two marker lines of a page with content, blank lines
// around it; the rest of the page is kept byte for byte.
func between(page []byte, startMarker, endMarker, content string) ([]byte, error) {
	start, end := bytes.Index(page, []byte(startMarker)), bytes.Index(page, []byte(endMarker))
	if start < 0 || end < start {
		return nil, fmt.Errorf("render: the page lacks the markers %q ... %q", startMarker, endMarker)
	}
	out := append([]byte(nil), page[:start+len(startMarker)]...)
	out = append(out, "\n\n"+content+"\n"...)
	return append(out, page[end:]...), nil
}

// codes shows names as code, separated by commas.
func codes(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	return strings.Join(quoted, ", ")
}
