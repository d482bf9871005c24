package domain

import (
	"errors"
	"fmt"
)

// ErrorKind tells the caller what went wrong, so that the API can choose a status code.
type ErrorKind int

const (
	// KindInvalid is bad input: a validation failure (400).
	KindInvalid ErrorKind = iota + 1
	// KindNotFound is an unknown resource (404).
	KindNotFound
	// KindForbidden is a resource of another account (403).
	KindForbidden
	// KindConflict is a request that contradicts the current state (409).
	KindConflict
)

// Error is a decision the domain refused, with a message fit to show an integrator.
type Error struct {
	Kind    ErrorKind
	Message string
}

func (e *Error) Error() string { return e.Message }

// Invalid reports bad input.
func Invalid(format string, args ...any) error {
	return &Error{Kind: KindInvalid, Message: fmt.Sprintf(format, args...)}
}

// NotFound reports an unknown resource.
func NotFound(format string, args ...any) error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf(format, args...)}
}

// Forbidden reports a resource that belongs to another account.
func Forbidden(format string, args ...any) error {
	return &Error{Kind: KindForbidden, Message: fmt.Sprintf(format, args...)}
}

// Conflict reports a request that contradicts the current state.
func Conflict(format string, args ...any) error {
	return &Error{Kind: KindConflict, Message: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of a domain error, or 0 for any other error.
func KindOf(err error) ErrorKind {
	var de *Error
	if errors.As(err, &de) {
		return de.Kind
	}
	return 0
}

// ErrWrongVersion is returned by an append whose expected stream version is stale:
// someone else appended first. The command reloads and decides again.
var ErrWrongVersion = errors.New("domain: stream changed since it was read")

// ErrAlreadyPerformed is returned by an append stamped with an idempotency id (Metadata) that
// another append carries already: another attempt of the same request performed it first.
var ErrAlreadyPerformed = errors.New("domain: the request of this idempotency id was performed already")
