package render

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/funnelhq/funnel/domain"
)

// The markers around the ErrorCode schema in each YAML source: what lies between them is written
// by WithErrorCodes from domain.ErrorCodes, the one list of error codes, so that the documents
// cannot drift from the codes the service answers with.
const (
	errorCodesBegin = "    # BEGIN ErrorCode: written by `make generate` from domain.ErrorCodes (domain/error_codes.go); edit it there.\n"
	errorCodesEnd   = "    # END ErrorCode\n"
)

// WithErrorCodes returns the YAML source of a document with its ErrorCode schema, between the
// markers, written from domain.ErrorCodes: the enum and a description giving each code's status
// and meaning. A source without the markers is an error.
func WithErrorCodes(source []byte) ([]byte, error) {
	begin := bytes.Index(source, []byte(errorCodesBegin))
	end := bytes.Index(source, []byte(errorCodesEnd))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("render: the ErrorCode schema's markers are missing: %q ... %q", errorCodesBegin, errorCodesEnd)
	}
	var out bytes.Buffer
	out.Write(source[:begin+len(errorCodesBegin)])
	out.WriteString(errorCodeSchema())
	out.Write(source[end:])
	return out.Bytes(), nil
}

// errorCodeSchema is the ErrorCode schema, indented as a member of components.schemas.
func errorCodeSchema() string {
	var b strings.Builder
	b.WriteString("    ErrorCode:\n")
	b.WriteString("      type: string\n")
	b.WriteString("      description: |-\n")
	b.WriteString("        The stable, machine-readable kind of an error: switch on it, not on the message (which\n")
	b.WriteString("        may change). Each code comes with one status:\n")
	for _, c := range domain.ErrorCodes {
		fmt.Fprintf(&b, "        - `%s` (%d): %s\n", c.Code, c.Status, c.Meaning)
	}
	b.WriteString("      enum:\n")
	for _, c := range domain.ErrorCodes {
		fmt.Fprintf(&b, "        - %s\n", c.Code)
	}
	return b.String()
}

// errorCodes lists the codes for /llms-full.txt, one a line: code, status, meaning.
func errorCodes() (string, error) {
	var b strings.Builder
	for _, c := range domain.ErrorCodes {
		fmt.Fprintf(&b, "%s %d: %s\n", c.Code, c.Status, c.Meaning)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
