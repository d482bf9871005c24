package domain

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Restorable is an aggregate whose whole state can be encoded and restored, so that a command
// can keep it with the stream version it reflects and read only the events appended after that
// version, instead of replaying a stream that grows without bound (a contact's tags applied and
// removed over and over). An encoded state is derived data, never a source of truth (DESIGN.md
// invariant 1): the session in commands/ keeps it in memory only, and the stream can always be
// replayed instead.
//
// Each aggregate encodes its state in a struct of its own with a format number. Change both
// together when the aggregate gains a field: a test restores states taken after every prefix of
// many event sequences and compares the result, unexported fields included, with a full replay.
type Restorable interface {
	Aggregate
	// EncodeState returns the aggregate's state, without the changes it has recorded.
	EncodeState() ([]byte, error)
	// RestoreState sets the state of an empty aggregate (fresh from its constructor) from an
	// encoded one. On an error, ErrUnknownStateFormat or data that does not decode, it changes
	// nothing, and the caller replays the stream instead.
	RestoreState(data []byte) error
}

// Final is a Restorable aggregate whose stream takes no event once it exists (a form: nothing
// changes or deletes one). A state kept of it that exists is its state for good, so a command
// uses it without looking for events after it: a read of the log fewer per command.
type Final interface {
	Restorable
	// Final tells whether the aggregate can change no more.
	Final() bool
}

// ErrUnknownStateFormat is the answer of RestoreState to a state encoded in another format than
// the aggregate's current one.
var ErrUnknownStateFormat = errors.New("domain: encoded state of an unknown format")

// encodedState is the envelope of every encoded state: the format of the aggregate's state
// struct, then the state.
type encodedState[S any] struct {
	Format int `json:"format"`
	State  S   `json:"state"`
}

func encodeState[S any](format int, state S) ([]byte, error) {
	data, err := json.Marshal(encodedState[S]{Format: format, State: state})
	if err != nil {
		return nil, fmt.Errorf("domain: encode state: %w", err)
	}
	return data, nil
}

// decodeState returns the state in data if it has the given format.
func decodeState[S any](data []byte, format int) (S, error) {
	var env encodedState[S]
	err := json.Unmarshal(data, &env)
	switch {
	case env.Format != format:
		var zero S
		return zero, ErrUnknownStateFormat
	case err != nil:
		var zero S
		return zero, fmt.Errorf("domain: decode state: %w", err)
	}
	return env.State, nil
}
