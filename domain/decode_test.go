package domain

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// Events are decoded with goccy/go-json (DecodeEvent) and encoded with encoding/json
// (EncodeEvent). For every registered type, filled with values of every field (strings with
// characters JSON escapes, numbers at their limits, empty and filled lists and maps, nil and set
// pointers, times), DecodeEvent must give what encoding/json gives.
func TestEventsDecodeAsEncodingJSONDecodesThem(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, version := range EventTypes() {
		goType := registry[name].goType
		for round := range 20 {
			v := reflect.New(goType).Elem()
			fill(v, rng, round)
			typ, _, data, err := EncodeEvent(v.Interface().(Event))
			if err != nil || typ != name {
				t.Fatalf("%s: encode: %s, %v", name, typ, err)
			}
			got, err := DecodeEvent(name, version, data)
			if err != nil {
				t.Fatalf("%s: decode %s: %v", name, data, err)
			}
			want := reflect.New(goType)
			if err := json.Unmarshal(data, want.Interface()); err != nil {
				t.Fatalf("%s: encoding/json: %v", name, err)
			}
			if !reflect.DeepEqual(got, want.Elem().Interface()) {
				t.Fatalf("%s decodes\n%s\nas   %#v\nnot  %#v", name, data, got, want.Elem().Interface())
			}
		}
	}
}

var awkward = []string{"", "plain", "Zoë <b>&amp;</b>", "line\nbreak\t\"quoted\"\\", "\u2028\u2029", "🙂 emoji", "\x00\x1f control"}

// fill sets every field of v that encoding/json writes, from rng; round 0 leaves lists, maps and
// pointers empty.
func fill(v reflect.Value, rng *rand.Rand, round int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(awkward[rng.IntN(len(awkward))] + fmt.Sprint(rng.IntN(1000)))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		limits := []int64{0, -1, 1, 1 << 53, -(1 << 62), int64(rng.Int32())}
		n := limits[rng.IntN(len(limits))]
		if v.OverflowInt(n) {
			n = int64(rng.IntN(100))
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(rng.IntN(200)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(rng.Float64() * 1e6)
	case reflect.Pointer:
		if round > 0 && rng.IntN(2) == 1 {
			p := reflect.New(v.Type().Elem())
			fill(p.Elem(), rng, round)
			v.Set(p)
		}
	case reflect.Slice:
		if round > 0 {
			n := rng.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				fill(s.Index(i), rng, round)
			}
			v.Set(s)
		}
	case reflect.Map:
		if round > 0 {
			m := reflect.MakeMap(v.Type())
			for range rng.IntN(3) {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				fill(k, rng, round)
				fill(e, rng, round)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.UnixMilli(rng.Int64N(4e12)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), rng, round)
			}
		}
	}
}
