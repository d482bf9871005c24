package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
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
func keepExactMembers(raw []byte, t reflect.Type) ([]byte, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		return raw, nil
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return raw, nil
	}
	switch {
	case t.Kind() == reflect.Struct && raw[0] == '{':
		fields := jsonFields(t)
		return rewriteObject(raw, func(name string) (reflect.Type, bool) {
			f, ok := fields[name]
			return f, ok
		})
	case t.Kind() == reflect.Map && raw[0] == '{':
		return rewriteObject(raw, func(string) (reflect.Type, bool) { return t.Elem(), true })
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && raw[0] == '[':
		return rewriteArray(raw, t.Elem())
	}
	return raw, nil
}

// rewriteObject writes the object raw again with the members member knows (by the type of their
// value), their values passed through keepExactMembers.
func rewriteObject(raw []byte, member func(name string) (reflect.Type, bool)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	out := append(make([]byte, 0, len(raw)), '{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		t, known := member(name)
		if !known {
			continue
		}
		if value, err = keepExactMembers(value, t); err != nil {
			return nil, err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		key, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, key...), ':'), value...)
	}
	return append(out, '}'), nil
}

// rewriteArray writes the array raw again, each element passed through keepExactMembers.
func rewriteArray(raw []byte, elem reflect.Type) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // [
		return nil, err
	}
	out := append(make([]byte, 0, len(raw)), '[')
	for dec.More() {
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		value, err := keepExactMembers(value, elem)
		if err != nil {
			return nil, err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, value...)
	}
	return append(out, ']'), nil
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
