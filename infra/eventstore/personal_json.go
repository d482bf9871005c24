package eventstore

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Sealing and opening move personal values out of an event's JSON data and back in. They work on
// the JSON text: gjson finds where each value on a personal path starts and ends, and the new
// text is the old one with those spans replaced, in one copy. Nothing else is decoded or encoded
// again, so every other member stays the bytes it was written as. Decoding the whole document
// into map[string]any and encoding it twice, as the first version did, cost most of what sealing
// cost (docs/performance.md, "What sealing costs").

// personalValue is one personal value of an event: its concrete path ("fields.0.value"), its
// JSON text, and where that text sits in the event's data.
type personalValue struct {
	path       string
	raw        string
	start, end int
}

// personalValuesOf returns the non-null values of data at paths (steps; "*" for every element
// of an array), in the order they sit in data.
func personalValuesOf(data []byte, paths [][]string) []personalValue {
	var out []personalValue
	find(gjson.Parse(string(data)), stepsOf(paths), "", &out)
	return out
}

// steps arranges paths by their first step; a step whose path ends there maps to nil (the whole
// value is personal, whatever else goes deeper).
type steps map[string][][]string

func stepsOf(paths [][]string) steps {
	out := make(steps, len(paths))
	ends := map[string]bool{}
	for _, p := range paths {
		switch {
		case len(p) == 0:
		case len(p) == 1:
			ends[p[0]] = true
			out[p[0]] = nil
		case !ends[p[0]]:
			out[p[0]] = append(out[p[0]], p[1:])
		}
	}
	return out
}

// find adds the non-null values below node on the paths of next; at is node's concrete path,
// with its trailing dot.
func find(node gjson.Result, next steps, at string, out *[]personalValue) {
	visit := func(step string, v gjson.Result, rest [][]string) {
		switch {
		case v.Type == gjson.Null:
		case rest == nil:
			*out = append(*out, personalValue{path: at + step, raw: v.Raw, start: v.Index, end: v.Index + len(v.Raw)})
		default:
			find(v, stepsOf(rest), at+step+".", out)
		}
	}
	switch {
	case node.IsObject():
		node.ForEach(func(key, v gjson.Result) bool {
			if rest, ok := next[key.Str]; ok {
				visit(key.Str, v, rest)
			}
			return true
		})
	case node.IsArray():
		rest, every := next["*"]
		if !every {
			return
		}
		i := 0
		node.ForEach(func(_, v gjson.Result) bool {
			visit(strconv.Itoa(i), v, rest)
			i++
			return true
		})
	}
}

// span is a part of a JSON text to replace.
type span struct {
	start, end int
	with       string
}

// spliced returns data with each span replaced; spans must not overlap.
func spliced(data []byte, spans []span, extra int) []byte {
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := make([]byte, 0, len(data)+extra)
	last := 0
	for _, s := range spans {
		out = append(out, data[last:s.start]...)
		out = append(out, s.with...)
		last = s.end
	}
	return append(out, data[last:]...)
}

// withNulls returns data with null in place of values.
func withNulls(data []byte, values []personalValue) []byte {
	spans := make([]span, 0, len(values))
	for _, v := range values {
		spans = append(spans, span{start: v.start, end: v.end, with: "null"})
	}
	return spliced(data, spans, 0)
}

// sealedData returns data with null in place of values and member (a member's name and value,
// as JSON text) first in its top-level object, where a reader finds it without reading further.
func sealedData(data []byte, values []personalValue, member string) ([]byte, error) {
	start := bytes.IndexByte(data, '{')
	if start < 0 {
		return nil, fmt.Errorf("event data is not a JSON object")
	}
	spans := make([]span, 0, len(values)+1)
	spans = append(spans, span{start: start + 1, end: start + 1, with: member + ","})
	for _, v := range values {
		spans = append(spans, span{start: v.start, end: v.end, with: "null"})
	}
	return spliced(data, spans, len(member)+1), nil
}

// encodeValues is the sealed form's plain text: one object of the values by concrete path,
// {"email": "…", "fields.0.value": …}.
func encodeValues(values []personalValue) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, v := range values {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(v.path)) // steps are member names and indices: plain ASCII
		b.WriteByte(':')
		b.WriteString(v.raw)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// withoutMember returns data without its top-level member name, and that member's value (not
// Exists when data has none).
func withoutMember(data []byte, name string) ([]byte, gjson.Result) {
	type member struct{ start, end int } // from the key's quote to the value's end
	var members []member
	target := -1
	var found gjson.Result
	gjson.Parse(string(data)).ForEach(func(key, v gjson.Result) bool {
		members = append(members, member{start: key.Index, end: v.Index + len(v.Raw)})
		if target < 0 && key.Str == name {
			target, found = len(members)-1, v
		}
		return target < 0 || len(members) < target+2 // on to the member after it
	})
	var cut span
	switch {
	case target < 0:
		return data, found
	case target > 0: // the comma before it goes with it
		cut = span{start: members[target-1].end, end: members[target].end}
	case len(members) > 1: // the first member: the comma after it goes with it
		cut = span{start: members[0].start, end: members[1].start}
	default:
		cut = span{start: members[0].start, end: members[0].end}
	}
	return spliced(data, []span{cut}, 0), found
}

// withValues returns data with each value of plain (an object of values by concrete path, as
// encodeValues writes it) in the place of what data holds at that path. A path no longer in data
// (an array grown shorter) is skipped.
func withValues(data, plain []byte) ([]byte, error) {
	if !gjson.ValidBytes(plain) {
		return nil, fmt.Errorf("personal values are not JSON")
	}
	tree := valueTree{}
	extra := 0
	gjson.ParseBytes(plain).ForEach(func(key, v gjson.Result) bool {
		tree.add(strings.Split(key.Str, "."), v.Raw)
		extra += len(v.Raw)
		return true
	})
	var spans []span
	replace(gjson.Parse(string(data)), tree, &spans)
	return spliced(data, spans, extra), nil
}

// valueTree holds values to put by the steps of their paths: at each step either the value's
// JSON text (string) or the steps below it (valueTree).
type valueTree map[string]any

func (t valueTree) add(steps []string, raw string) {
	for _, step := range steps[:len(steps)-1] {
		next, ok := t[step].(valueTree)
		if !ok {
			next = valueTree{}
			t[step] = next
		}
		t = next
	}
	t[steps[len(steps)-1]] = raw
}

// replace adds a span for every value below node that tree has a value for.
func replace(node gjson.Result, tree valueTree, spans *[]span) {
	i := 0
	array := node.IsArray()
	node.ForEach(func(key, v gjson.Result) bool {
		step := key.Str
		if array {
			step = strconv.Itoa(i)
			i++
		}
		switch t := tree[step].(type) {
		case string:
			*spans = append(*spans, span{start: v.Index, end: v.Index + len(v.Raw), with: t})
		case valueTree:
			replace(v, t, spans)
		}
		return true
	})
}
