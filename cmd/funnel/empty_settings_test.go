//go:build unix

package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// README, Configuration: a variable set to the empty string stops the start, naming it, as an
// empty listener always did, rather than being read as the default (an empty role, log level or
// backoff was) or as off (an empty switch was); a flag given beside it overrides it. An operator
// token with white space around it stops the start too: HTTP drops that white space from the
// Authorization header, so no operator request could ever present the token.
func TestServeRefusesAnEmptySettingAndAnUnusableToken(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"empty role", []string{"FUNNEL_ROLE="}, nil, "FUNNEL_ROLE is empty"},
		{"empty log level", []string{"FUNNEL_LOG_LEVEL="}, nil, "FUNNEL_LOG_LEVEL is empty"},
		{"empty backoff base", []string{"FUNNEL_WEBHOOK_BACKOFF_BASE="}, nil, "FUNNEL_WEBHOOK_BACKOFF_BASE is empty"},
		{"empty backoff cap", []string{"FUNNEL_WEBHOOK_BACKOFF_CAP="}, nil, "FUNNEL_WEBHOOK_BACKOFF_CAP is empty"},
		{"empty private targets switch", []string{"FUNNEL_WEBHOOK_ALLOW_PRIVATE="}, nil, "FUNNEL_WEBHOOK_ALLOW_PRIVATE is empty"},
		{"empty rate limits", []string{"FUNNEL_RATE_LIMITS="}, nil, `"FUNNEL_RATE_LIMITS"`},
		{"empty role flag", nil, []string{"--role", ""}, "FUNNEL_ROLE is empty"},
		{"a flag does not excuse another empty variable", []string{"FUNNEL_ROLE=", "FUNNEL_LOG_LEVEL="}, []string{"--role", "all"}, "FUNNEL_LOG_LEVEL is empty"},
		{"token with a trailing space", []string{"FUNNEL_ADMIN_TOKEN=abc "}, nil, "FUNNEL_ADMIN_TOKEN must not begin or end with white space"},
		{"token of spaces", []string{"FUNNEL_ADMIN_TOKEN=  "}, nil, "FUNNEL_ADMIN_TOKEN must not begin or end with white space"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Root flags go before the command, as an operator would write them.
			args := append(append([]string{"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, c.args...), "serve")
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), "FUNNEL_DATABASE_URL=sqlite:"+filepath.Join(t.TempDir(), "f.db"), "FUNNEL_ADMIN_TOKEN=t", "FUNNEL_SECRET_KEY=")
			cmd.Env = append(cmd.Env, c.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("serve with %v %v started instead of refusing:\n%s", c.env, c.args, stderr.String())
			}
			exitErr, ok := err.(*exec.ExitError)
			if !ok || exitErr.ExitCode() != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("serve with %v %v: %v, want exit 1 and %q on stderr:\n%s", c.env, c.args, err, c.want, stderr.String())
			}
		})
	}
}

// A flag given beside an empty variable overrides it, and serve starts: a value given as a flag,
// false among them, is a value given on purpose, whatever the variable says.
func TestServeStartsWhenAFlagOverridesAnEmptyVariable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "f.db")
	srv := launchServe(t, bin, dbURL, []string{"--role", "all", "--webhook-allow-private=false", "--log-level", "info"},
		"FUNNEL_ROLE=", "FUNNEL_WEBHOOK_ALLOW_PRIVATE=", "FUNNEL_LOG_LEVEL=")
	if err := srv.waitReady(30 * time.Second); err != nil {
		t.Fatalf("serve with empty variables, each overridden by a flag: %v\n%s", err, srv.logTail())
	}
}
