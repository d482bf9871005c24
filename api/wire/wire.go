// Package wire holds the Go types of the integration API's contract, generated from its OpenAPI
// document (models.gen.go: requests, answers, webhook envelopes and payloads), and the JSON
// conventions they share, so that a time or an empty list reads the same wherever an integrator
// meets it. Do not edit models.gen.go: change api/openapi/integration.yaml and run `make generate`.
package wire

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o models.gen.go ../openapi/integration.json

import "time"

// TimeLayout is how every timestamp is written: RFC 3339, UTC, millisecond precision.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Time formats t in TimeLayout.
func Time(t time.Time) string { return t.UTC().Format(TimeLayout) }

// List turns a nil slice into an empty one, so that JSON shows [] rather than null.
func List[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Object turns a nil map into an empty one, so that JSON shows {} rather than null.
func Object[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// Value is what an optional member of a request holds: its zero value when left out or null.
func Value[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// OrNull shows an optional string that is not set as null rather than "".
func OrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
