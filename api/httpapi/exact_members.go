package httpapi

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// keepExactMembers returns the JSON value raw without the object members whose names are not
// exactly those that t (the Go type raw is to be decoded into) takes at that point, following
// structs (their json names, untagged embedded structs flattened), pointers, slices, arrays and
// map values. encoding/json matches a member to a field whatever the case of its name, so an
// unknown member "FIRSTNAME" would be read as firstName (and the later of the two would win);
// the API ignores unknown members (integration-api.md "Everywhere"), and a name in another case
// is one. A type that decodes itself (UnmarshalJSON, UnmarshalText) or an interface gets its
// value as sent. Members are kept in their order and values as written (numbers as they are);
// a value of a shape other than t's is left as it is, for the decoder to refuse.
//
// raw must be one valid JSON value.
func keepExactMembers(raw []byte, t reflect.Type) []byte {
	v := gjson.ParseBytes(raw)
	if !hasInexactMembers(v, t) {
		return raw // the common case: read once, nothing written
	}
	return []byte(exactMembers(v, t))
}

// hasInexactMembers tells whether v holds a member that t does not take under that exact name.
func hasInexactMembers(v gjson.Result, t reflect.Type) bool {
	t = indirect(t)
	if decodesItself(t) {
		return false
	}
	found := false
	switch {
	case t.Kind() == reflect.Struct && v.IsObject():
		fields := jsonFields(t)
		v.ForEach(func(name, value gjson.Result) bool {
			f, known := fields[name.Str]
			found = !known || hasInexactMembers(value, f)
			return !found
		})
	case t.Kind() == reflect.Map && v.IsObject(), (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && v.IsArray():
		v.ForEach(func(_, value gjson.Result) bool {
			found = hasInexactMembers(value, t.Elem())
			return !found
		})
	}
	return found
}

// exactMembers writes v again without the members t does not take under their exact names, the
// others as they were written (their names escaped as sent, their values' text unchanged).
func exactMembers(v gjson.Result, t reflect.Type) string {
	t = indirect(t)
	if decodesItself(t) {
		return v.Raw
	}
	var out strings.Builder
	switch {
	case t.Kind() == reflect.Struct && v.IsObject():
		fields := jsonFields(t)
		out.WriteByte('{')
		v.ForEach(func(name, value gjson.Result) bool {
			if f, known := fields[name.Str]; known {
				if out.Len() > 1 {
					out.WriteByte(',')
				}
				out.WriteString(name.Raw + ":" + exactMembers(value, f))
			}
			return true
		})
		out.WriteByte('}')
	case t.Kind() == reflect.Map && v.IsObject():
		out.WriteByte('{')
		v.ForEach(func(name, value gjson.Result) bool {
			if out.Len() > 1 {
				out.WriteByte(',')
			}
			out.WriteString(name.Raw + ":" + exactMembers(value, t.Elem()))
			return true
		})
		out.WriteByte('}')
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && v.IsArray():
		out.WriteByte('[')
		v.ForEach(func(_, value gjson.Result) bool {
			if out.Len() > 1 {
				out.WriteByte(',')
			}
			out.WriteString(exactMembers(value, t.Elem()))
			return true
		})
		out.WriteByte(']')
	default:
		return v.Raw
	}
	return out.String()
}

// indirect is t without its pointers.
func indirect(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself tells whether encoding/json leaves the decoding of a t to t itself, or to
// whatever value an interface holds.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Kind() == reflect.Interface || p.Implements(jsonUnmarshaler) || p.Implements(textUnmarshaler)
}

// structFields caches jsonFields by struct type.
var structFields sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields are the exact JSON names of a struct's fields (as encoding/json names them:
// the json tag's name, else the Go name; untagged embedded structs flattened) and their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if cached, ok := structFields.Load(t); ok {
		return cached.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		embedded := f.Type
		if embedded.Kind() == reflect.Pointer {
			embedded = embedded.Elem()
		}
		if f.Anonymous && name == "" && embedded.Kind() == reflect.Struct {
			for inner, typ := range jsonFields(embedded) {
				if _, shadowed := out[inner]; !shadowed {
					out[inner] = typ
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	structFields.Store(t, out)
	return out
}
