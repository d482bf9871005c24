package main

import "testing"

// Whether a setting was given as a flag is read from the command line, where a flag's value is
// the token after it whatever it looks like: `--admin-token -webhook-allow-private` gives the
// operator token, not the switch (beside an empty FUNNEL_WEBHOOK_ALLOW_PRIVATE, serve must still
// refuse the empty variable).
func TestAFlagsValueIsNotTakenForAnotherFlag(t *testing.T) {
	for _, c := range []struct {
		args  []string
		given bool
	}{
		{[]string{"serve", "--admin-token", "-webhook-allow-private"}, false},
		{[]string{"serve", "--admin-token", "--webhook-allow-private=true"}, false},
		{[]string{"serve", "--webhook-allow-private=false"}, true},
		{[]string{"serve", "-webhook-allow-private"}, true},
		{[]string{"--role", "all", "serve", "--webhook-allow-private"}, true},
		{[]string{"serve", "--admin-token=x", "--webhook-allow-private"}, true},
		{[]string{"serve", "--webhook-allow-private", "--admin-token", "t"}, true},
		{[]string{"serve", "--", "--webhook-allow-private"}, false},
	} {
		if got := givenAsFlag(c.args, []string{"webhook-allow-private"}, configFlags); got != c.given {
			t.Errorf("givenAsFlag(%q) = %v, want %v", c.args, got, c.given)
		}
	}
}
