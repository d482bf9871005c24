package domain

// Aggregate is an event-sourced entity: its state is the fold of its stream's events, and its
// decisions record new events. The session in commands/ loads it, runs a decision, and appends
// Changes() with the version it read.
type Aggregate interface {
	StreamID() string
	// Replay applies one event read from the stream.
	Replay(e Event)
	// Changes are the events recorded since the aggregate was loaded, oldest first.
	Changes() []Event
}

// changes is embedded by every aggregate to keep the events its decisions record.
type changes struct {
	pending []Event
}

// Changes returns the events recorded since the aggregate was loaded.
func (c *changes) Changes() []Event { return c.pending }
