package domain

import (
	"errors"
	"fmt"
	"net/http"
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

// Error is a decision the domain refused, with a message fit to show an integrator, the stable
// code the API answers it with and, when one field of the request is at fault, that field's JSON
// path (Param: "email", "tagIds[3]", "values.fld_x").
type Error struct {
	Kind    ErrorKind
	Code    ErrorCode
	Param   string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Invalid reports bad input that no single field is at fault for (code invalid_request).
func Invalid(format string, args ...any) error {
	return &Error{Kind: KindInvalid, Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// InvalidField reports a bad value of one field, param being its JSON path (code invalid_request).
func InvalidField(param, format string, args ...any) error {
	return &Error{Kind: KindInvalid, Code: CodeInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// NotFound reports an unknown resource (code not_found).
func NotFound(format string, args ...any) error {
	return &Error{Kind: KindNotFound, Code: CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// Forbidden reports a resource that belongs to another account (code forbidden).
func Forbidden(format string, args ...any) error {
	return &Error{Kind: KindForbidden, Code: CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

// Conflict reports a request that contradicts the current state (code conflict).
func Conflict(format string, args ...any) error {
	return &Error{Kind: KindConflict, Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// Refused reports a refusal with a code of its own (booking_conflict, activation_expired, ...):
// its kind follows from the code's status.
func Refused(code ErrorCode, format string, args ...any) error {
	return &Error{Kind: kindOfStatus(code.Status()), Code: code, Message: fmt.Sprintf(format, args...)}
}

// kindOfStatus is the kind of a refusal answered with status.
func kindOfStatus(status int) ErrorKind {
	switch status {
	case http.StatusNotFound:
		return KindNotFound
	case http.StatusForbidden:
		return KindForbidden
	case http.StatusConflict:
		return KindConflict
	default:
		return KindInvalid
	}
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

// AtParam returns err naming param (a JSON path) as the field at fault when err is a domain
// error, its message unchanged; any other error as it is. A caller that knows the field's place
// in the request (its index in a list) uses it on an error of a check that knows only its name.
func AtParam(err error, param string) error {
	var de *Error
	if !errors.As(err, &de) {
		return err
	}
	named := *de
	named.Param = param
	return &named
}

// UnderParam returns err with its param placed under prefix ("automations[2]" and "type" make
// "automations[2].type"; no param makes prefix itself), its message unchanged; any error that is
// not a domain error as it is.
func UnderParam(err error, prefix string) error {
	var de *Error
	if !errors.As(err, &de) {
		return err
	}
	if de.Param == "" {
		return AtParam(err, prefix)
	}
	return AtParam(err, prefix+"."+de.Param)
}
