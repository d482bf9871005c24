package projections

import (
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// keptWritten bounds the contacts a process keeps as its own writes left them. A kept contact is
// needed only from its commit to its answer, microseconds later: 512 covers every write in flight
// at hundreds of clients, at a few hundred bytes each, within the service's memory target.
const keptWritten = 512

// written keeps the contacts this process's append transactions wrote, each as of the position of
// the last event of its batch, so that a write's answer is built from what it wrote instead of
// read back. Only a committed write is kept (sqldb.Committer). A contact kept at a position
// before the one asked for (another process wrote it since) is not used: the reader reads it.
type written struct {
	mu       sync.Mutex
	contacts *simplelru.LRU[string, writtenContact]
}

type writtenContact struct {
	contact  Contact
	position int64
}

func newWritten() *written {
	contacts, err := simplelru.NewLRU[string, writtenContact](keptWritten, nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &written{contacts: contacts}
}

// keep records the contacts of a committed batch whose last event is at position.
func (w *written) keep(contacts []*Contact, position int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range contacts {
		if old, ok := w.contacts.Peek(c.ID); ok && old.position > position {
			continue
		}
		w.contacts.Add(c.ID, writtenContact{contact: *c, position: position})
	}
}

// forget drops erased contacts.
func (w *written) forget(ids []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.contacts.Remove(id)
	}
}

// at returns a copy of the contact of id as kept at position or later, if it is.
func (w *written) at(id string, position int64) (Contact, bool) {
	w.mu.Lock()
	kept, ok := w.contacts.Get(id)
	w.mu.Unlock()
	if !ok || kept.position < position {
		return Contact{}, false
	}
	c := kept.contact
	c.TagIDs = slices.Clone(c.TagIDs)
	c.CustomFields = maps.Clone(c.CustomFields)
	return c, true
}
