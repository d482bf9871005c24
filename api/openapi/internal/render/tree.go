// Package render turns the hand-written OpenAPI documents (YAML) into what the service serves:
// their JSON, in the order they were written, and /llms-full.txt, the integration document as
// plain text inside the prose of a template. `make generate` (internal/gendocs) writes the
// results beside the sources; the tests render them again and compare.
package render

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"
)

// document is a parsed YAML document, kept as nodes so that its order survives.
type document struct {
	root *yaml.Node // the top-level mapping
}

// parse reads one YAML document whose top level is a mapping.
func parse(source []byte) (document, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(source, &doc); err != nil {
		return document{}, fmt.Errorf("render: parse: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return document{}, fmt.Errorf("render: the document must be one YAML mapping")
	}
	return document{root: doc.Content[0]}, nil
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// pair is one member of a mapping.
type pair struct {
	key   string
	value *yaml.Node
}

// members lists a mapping's members in order (nothing for another kind of node).
func members(n *yaml.Node) []pair {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make([]pair, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, pair{key: n.Content[i].Value, value: resolve(n.Content[i+1])})
	}
	return out
}

// get returns a mapping's member, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	for _, m := range members(n) {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// text returns a scalar member's value, or "".
func text(n *yaml.Node, key string) string {
	if v := get(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// items lists a sequence's items (nothing for another kind of node).
func items(n *yaml.Node) []*yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out
}

// scalars lists the values of a sequence of scalars, or of a lone scalar.
func scalars(n *yaml.Node) []string {
	n = resolve(n)
	if n != nil && n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, it := range items(n) {
		out = append(out, it.Value)
	}
	return out
}

// ref follows a local reference ("#/components/schemas/Contact") from the document's root; a
// node that is not a reference is returned as it is.
func (d document) ref(n *yaml.Node) (*yaml.Node, error) {
	n = resolve(n)
	target := text(n, "$ref")
	if target == "" {
		return n, nil
	}
	path, ok := strings.CutPrefix(target, "#/")
	if !ok {
		return nil, fmt.Errorf("render: only local references are supported, not %q", target)
	}
	at := d.root
	for _, token := range strings.Split(path, "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		if at = get(at, token); at == nil {
			return nil, fmt.Errorf("render: %q names nothing", target)
		}
	}
	return d.ref(at)
}

// refName is the last segment of a reference ("Contact"), or "".
func refName(n *yaml.Node) string {
	target := text(n, "$ref")
	if target == "" {
		return ""
	}
	return target[strings.LastIndex(target, "/")+1:]
}
