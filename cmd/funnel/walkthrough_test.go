//go:build unix

package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// walkthroughMarker precedes the README block that a newcomer pastes after starting the demo.
const walkthroughMarker = "<!-- walkthrough: the next sh block is run by cmd/funnel/walkthrough_test.go -->"

// The README's curl walk-through runs as written against the built binary started with --demo:
// every call answers 2xx (the test runs the block with errexit and pipefail, so it stops at the
// first that does not) and its lookups find what the next step needs. Only the two secrets that serve prints are given, as the README says.
func TestReadmeWalkthroughRunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the walk-through needs %s: %v", tool, err)
			}
			t.Skipf("the walk-through needs %s, which is not installed here", tool)
		}
	}
	block := readmeWalkthrough(t)
	bin := buildBinary(t)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		// As the README starts it: webhooks may target local http addresses.
		srv := startDemo(t, bin, sqldbtest.URL(t, dialect), "FUNNEL_WEBHOOK_ALLOW_PRIVATE=true")
		key := demoKey(t, srv)

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block) // stop at the first failing call
		cmd.Env = append(os.Environ(), "KEY="+key, "OP="+operatorToken, "API="+srv.apiURL, "ADMIN="+srv.opURL)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("the walk-through failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		out := stdout.String()
		// Steps print what they found: the lead it patched, the demo checkout's monthly tier, the
		// sample built from the demo form, and what the log recorded for Acme's contact (created and tagged).
		for _, want := range []string{`"amount": 49900`, `"interval": "month"`, `"Newsletter signup"`, "ContactCreated", "TagApplied"} {
			if !strings.Contains(out, want) {
				t.Errorf("the walk-through's output lacks %s:\n%s", want, out)
			}
		}
	})
}

// readmeWalkthrough returns the sh block that follows the walk-through marker in README.md.
func readmeWalkthrough(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, found := strings.Cut(string(readme), walkthroughMarker)
	if !found {
		t.Fatal("README.md has no walk-through marker")
	}
	m := regexp.MustCompile("(?s)^\\s*```sh\n(.*?)\n```").FindStringSubmatch(after)
	if m == nil {
		t.Fatal("no sh block follows the walk-through marker in README.md")
	}
	return m[1]
}

// startDemo starts the binary with --demo on an empty database.
func startDemo(t *testing.T, bin, dbURL string, env ...string) *server {
	t.Helper()
	srv := launchServe(t, bin, dbURL, []string{"--demo"}, env...)
	if err := srv.waitReady(30 * time.Second); err != nil {
		t.Fatalf("start with --demo: %v\n%s", err, srv.logTail())
	}
	return srv
}

// demoKey waits for the "demo API key" line that serve --demo prints once the demo data is in.
func demoKey(t *testing.T, srv *server) string {
	t.Helper()
	line := regexp.MustCompile(`demo API key: (\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := line.FindStringSubmatch(srv.logTail()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("serve --demo printed no API key:\n%s", srv.logTail())
	return ""
}
