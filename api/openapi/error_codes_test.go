package openapi_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/api/openapi"
	"github.com/funnelhq/funnel/domain"
)

// The documents list the codes the service answers with, and only those: the `code` of Error
// (and of the integration document's RateLimited) is an enum equal to domain.ErrorCodes, in its
// order, and /llms-full.txt gives each code with its status.
func TestDocumentsListEveryErrorCode(t *testing.T) {
	var want []string
	for _, c := range domain.ErrorCodes {
		want = append(want, string(c.Code))
	}
	for _, d := range documents {
		t.Run(d.name, func(t *testing.T) {
			doc := load(t, d.served)
			errSchema := doc.Components.Schemas["Error"].Value
			if !slices.Contains(errSchema.Required, "code") {
				t.Errorf("Error does not require code: %v", errSchema.Required)
			}
			if errSchema.Properties["param"] == nil {
				t.Error("Error has no param")
			}
			var got []string
			for _, v := range errSchema.Properties["code"].Value.Enum {
				got = append(got, v.(string))
			}
			if !slices.Equal(got, want) {
				t.Errorf("Error.code's enum = %v,\nwant domain.ErrorCodes %v", got, want)
			}
		})
	}
	limited := load(t, openapi.Integration()).Components.Schemas["RateLimited"].Value
	if code := limited.Properties["code"]; code == nil || code.Value.Const != string(domain.CodeRateLimited) || !slices.Contains(limited.Required, "code") {
		t.Errorf("RateLimited's code is not the required rate_limited: %+v", code)
	}
	text := string(openapi.LLMsFull())
	docs := string(read(t, "../../docs/integration-api.md"))
	for _, c := range domain.ErrorCodes {
		if line := string(c.Code) + " " + strconv.Itoa(c.Status) + ": " + c.Meaning + "\n"; !strings.Contains(text, "\n"+line) {
			t.Errorf("llms-full.txt does not list %q", line)
		}
		if row := fmt.Sprintf("\n| `%s` | %d | %s |\n", c.Code, c.Status, c.Meaning); !strings.Contains(docs, row) {
			t.Errorf("docs/integration-api.md's table of codes lacks the row %q", row)
		}
	}
	_, table, found := strings.Cut(docs, "| code | status | meaning |")
	if !found {
		t.Fatal("docs/integration-api.md has no table of codes")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	if rows := strings.Count(table, "\n| `"); rows != len(domain.ErrorCodes) {
		t.Errorf("docs/integration-api.md's table of codes has %d rows, want %d", rows, len(domain.ErrorCodes))
	}
}

// Every code has the one status its meaning calls for in decisions.md "Error codes", and every
// status an answer can have a general code (what WriteError answers).
func TestErrorCodeStatuses(t *testing.T) {
	want := map[domain.ErrorCode]int{
		"invalid_json": 400, "invalid_request": 400, "unauthenticated": 401, "insufficient_scope": 403,
		"forbidden": 403, "not_found": 404, "method_not_allowed": 405, "body_too_large": 413,
		"rate_limited": 429, "idempotency_key_reused": 409, "idempotency_key_in_progress": 409,
		"booking_conflict": 409, "activation_conflict": 409, "activation_expired": 400,
		"subscription_active": 409, "conflict": 409, "unavailable": 503, "internal": 500,
	}
	if len(domain.ErrorCodes) != len(want) {
		t.Errorf("%d codes, want %d", len(domain.ErrorCodes), len(want))
	}
	for _, c := range domain.ErrorCodes {
		if c.Status != want[c.Code] || c.Code.Status() != want[c.Code] {
			t.Errorf("%s: status %d, want %d", c.Code, c.Status, want[c.Code])
		}
		if c.Meaning == "" {
			t.Errorf("%s has no meaning", c.Code)
		}
	}
	for _, status := range []int{400, 401, 403, 404, 405, 409, 413, 429, 500, 503} {
		if got := domain.DefaultErrorCode(status).Status(); got != status {
			t.Errorf("the general code of %d is answered with %d", status, got)
		}
	}
}
