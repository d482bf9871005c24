package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v4"
)

// JSON converts a YAML document to indented JSON with its members in the order they were
// written (a map would sort them), aliases expanded. Only what JSON can say is accepted:
// mappings with scalar keys, sequences, strings, numbers, booleans and null.
func JSON(source []byte) ([]byte, error) {
	doc, err := parse(source)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := writeJSON(&compact, doc.root, 0); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("render: indent: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// maxDepth stops an alias that contains itself.
const maxDepth = 100

func writeJSON(out *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("render: nesting deeper than %d (an alias that contains itself?)", maxDepth)
	}
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		out.WriteByte('{')
		for i, m := range members(n) {
			if i > 0 {
				out.WriteByte(',')
			}
			if m.key == "<<" {
				return fmt.Errorf("render: line %d: merge keys (<<) are not supported", n.Line)
			}
			writeString(out, m.key)
			out.WriteByte(':')
			if err := writeJSON(out, m.value, depth+1); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	case yaml.SequenceNode:
		out.WriteByte('[')
		for i, it := range items(n) {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := writeJSON(out, it, depth+1); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(out, n)
	default:
		return fmt.Errorf("render: line %d: unexpected YAML node", n.Line)
	}
	return nil
}

func writeScalar(out *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!str":
		writeString(out, n.Value)
	case "!!bool", "!!null":
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("render: line %d: %w", n.Line, err)
		}
		b, _ := json.Marshal(v) // a bool or nil always encodes
		out.Write(b)
	case "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("render: line %d: %w", n.Line, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("render: line %d: the number %q has no JSON form", n.Line, n.Value)
		}
		if _, err := strconv.ParseFloat(string(b), 64); err != nil {
			return fmt.Errorf("render: line %d: %q is not a JSON number", n.Line, n.Value)
		}
		out.Write(b)
	default:
		return fmt.Errorf("render: line %d: unsupported YAML tag %s", n.Line, n.ShortTag())
	}
	return nil
}

// writeString writes a JSON string without escaping <, > and & (the text is read by people too).
func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	out.Truncate(out.Len() - 1) // Encode ends with a newline
}
