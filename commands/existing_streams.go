package commands

import (
	"github.com/hashicorp/golang-lru/v2"
)

// maxExistingStreams bounds the streams a process remembers as existing (about 100 bytes each).
const maxExistingStreams = 4096

// existingStreams remembers the streams a command took for new (session.mayBeNew) whose append
// then failed on a version: streams that exist, the ids of erased contacts above all. An erased
// contact's state is never kept, so without this every write of its email (to the contact that
// took its place) would take it for new again and fail an append first. A stream never stops
// existing, so what is remembered stays true (a version that failed on another stream of the
// append only costs that stream's guess next time: it is read instead).
type existingStreams struct {
	ids *lru.Cache[string, struct{}]
}

func newExistingStreams() existingStreams {
	ids, err := lru.New[string, struct{}](maxExistingStreams)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return existingStreams{ids: ids}
}

// add remembers that stream id exists.
func (e existingStreams) add(id string) { e.ids.Add(id, struct{}{}) }

// has tells whether stream id is remembered as existing.
func (e existingStreams) has(id string) bool { return e.ids.Contains(id) }
