package operator

import (
	"sort"

	"github.com/tidwall/gjson"
)

// keepNulls returns encoded, an event's data encoded anew from its Go value (redact), with null
// back wherever stored, the data as the log holds it, has null and encoded has "". An erased
// person's values are stored as null and shown as null in the history (decisions.md "Erasure");
// the Go value reads each of them as "". Only those: a member encoded anew with any other value
// (a redacted secret, an upcast) is what the encoding meant.
func keepNulls(stored, encoded []byte) []byte {
	var spans [][2]int
	nullsIn(gjson.ParseBytes(stored), gjson.ParseBytes(encoded), &spans)
	if len(spans) == 0 {
		return encoded
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	out := make([]byte, 0, len(encoded)+2*len(spans))
	last := 0
	for _, s := range spans {
		out = append(out, encoded[last:s[0]]...)
		out = append(out, "null"...)
		last = s[1]
	}
	return append(out, encoded[last:]...)
}

// nullsIn adds the spans of encoded that hold "" where stored, the same document as it was
// stored, holds null, walking both side by side.
func nullsIn(stored, encoded gjson.Result, spans *[][2]int) {
	switch {
	case stored.IsObject() && encoded.IsObject():
		members := map[string]gjson.Result{}
		encoded.ForEach(func(k, v gjson.Result) bool {
			members[k.Str] = v
			return true
		})
		stored.ForEach(func(k, v gjson.Result) bool {
			if e, ok := members[k.Str]; ok {
				nullIn(v, e, spans)
			}
			return true
		})
	case stored.IsArray() && encoded.IsArray():
		items := encoded.Array()
		i := 0
		stored.ForEach(func(_, v gjson.Result) bool {
			if i < len(items) {
				nullIn(v, items[i], spans)
			}
			i++
			return true
		})
	}
}

func nullIn(stored, encoded gjson.Result, spans *[][2]int) {
	if stored.Type == gjson.Null {
		if encoded.Type == gjson.String && encoded.Raw == `""` {
			*spans = append(*spans, [2]int{encoded.Index, encoded.Index + len(encoded.Raw)})
		}
		return
	}
	nullsIn(stored, encoded, spans)
}
