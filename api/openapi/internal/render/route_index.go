package render

import (
	"fmt"
	"strings"
)

// The markers around the index of routes in docs/operator-api.md: what lies between them is
// written by `make generate`.
const (
	routeIndexStart = "<!-- The index of routes: written by `make generate` from the paths of operator.yaml. -->"
	routeIndexEnd   = "<!-- End of the index of routes. -->"
)

// WithRouteIndex rewrites the index of routes between its markers in a Markdown page: every
// operation of the document, in the order of its paths, with its summary. A route whose rules
// the document's description says in full needs nothing more on the page.
func WithRouteIndex(page, documentYAML []byte) ([]byte, error) {
	doc, err := parse(documentYAML)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("| Route | What it does |\n| --- | --- |\n")
	for _, path := range members(get(doc.root, "paths")) {
		for _, method := range methods {
			op := get(path.value, method)
			if op == nil {
				continue
			}
			summary := text(op, "summary")
			if summary == "" {
				return nil, fmt.Errorf("render: %s %s has no summary", strings.ToUpper(method), path.key)
			}
			fmt.Fprintf(&b, "| `%s %s` | %s |\n", strings.ToUpper(method), path.key, summary)
		}
	}
	return between(page, routeIndexStart, routeIndexEnd, b.String())
}
