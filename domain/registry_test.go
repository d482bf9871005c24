package domain

import (
	"encoding/json"
	"testing"
)

// renamedV2 stands for an event whose schema changed: version 1 stored "name", version 2
// stores "fullName".
type renamedV2 struct {
	FullName string `json:"fullName"`
}

func (renamedV2) EventType() string { return "TestRenamed" }

func TestOldSchemaVersionsAreUpcastWhenRead(t *testing.T) {
	register(renamedV2{}, 2, map[int]Upcaster{
		1: func(old json.RawMessage) (json.RawMessage, error) {
			var v1 struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(old, &v1); err != nil {
				return nil, err
			}
			return json.Marshal(renamedV2{FullName: v1.Name})
		},
	})
	defer delete(registry, "TestRenamed")

	typ, version, data, err := EncodeEvent(renamedV2{FullName: "Ada"})
	if err != nil || typ != "TestRenamed" || version != 2 {
		t.Fatalf("encode = %s v%d, %v", typ, version, err)
	}
	current, err := DecodeEvent(typ, version, data)
	if err != nil || current.(renamedV2).FullName != "Ada" {
		t.Fatalf("decode current = %+v, %v", current, err)
	}
	old, err := DecodeEvent("TestRenamed", 1, []byte(`{"name": "Grace"}`))
	if err != nil || old.(renamedV2).FullName != "Grace" {
		t.Fatalf("decode version 1 = %+v, %v", old, err)
	}
	if _, err := DecodeEvent("TestRenamed", 3, []byte(`{}`)); err == nil {
		t.Fatal("a version newer than the build must not decode")
	}
	if _, err := DecodeEvent("NoSuchEvent", 1, []byte(`{}`)); err == nil {
		t.Fatal("an unknown type must not decode")
	}
}

func TestEveryRegisteredEventDecodesAtItsVersion(t *testing.T) {
	for name, version := range EventTypes() {
		e, err := DecodeEvent(name, version, []byte(`{}`))
		if err != nil {
			t.Errorf("%s does not decode: %v", name, err)
		} else if e.EventType() != name {
			t.Errorf("%s decodes to a %s", name, e.EventType())
		}
	}
}
