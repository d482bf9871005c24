// Package admin holds the Go types of the operator API's contract (/admin/v1): its requests and
// answers, generated from its OpenAPI document (models.gen.go). Do not edit models.gen.go: change
// api/openapi/operator.yaml, then run `make generate`. A time is a wire.DateTime, so that it is
// written as every answer writes one.
package admin

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o models.gen.go ../../openapi/operator.json
