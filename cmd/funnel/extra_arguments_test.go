//go:build unix

package main_test

import (
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A command that takes no arguments refuses any, with a non-zero exit and before it does anything:
// `migrate extra-arg` migrated and ignored the argument (and `serve --demo true` served without a
// word about its true).
func TestCommandsRefuseArgumentsTheyDoNotTake(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	// serve shares the check (noArguments) but is left out: without it, it would serve on.
	for _, c := range []struct {
		args []string
		name string
	}{
		{[]string{"migrate", "extra-arg"}, "migrate"},
		{[]string{"projections", "list", "contacts"}, "projections list"},
		{[]string{"history", "--account", "acc_1", "--email", "a@example.com", "extra-arg"}, "history"},
	} {
		out, errOut, code := run(t, bin, dbURL, c.args...)
		want := c.name + " takes no arguments"
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, want non-zero with %q\n%s%s", c.args, code, want, out, errOut)
		}
	}
	// Refused before it did anything: the first migrate still finds every migration to apply.
	if out, errOut, code := run(t, bin, dbURL, "migrate"); code != 0 || !strings.Contains(out, "migrations applied") {
		t.Fatalf("migrate after the refused ones: exit %d\n%s%s", code, out, errOut)
	}
}
