package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The key a process seals with, from the keys it lists and the order in which keys first sealed
// (sealingKeyFor), through the rotation of README "Rotating the server key" and the restarts
// around it.
func TestTheKeyThatSealsFollowsTheRotations(t *testing.T) {
	for _, c := range []struct {
		name    string
		listed  []string
		seqs    map[string]int64
		want    string
		refused string // part of the refusal, or "" when the start goes on
	}{
		{name: "a first start", listed: []string{"old"}, seqs: map[string]int64{}, want: "old"},
		{name: "the first round: the new key only opens", listed: []string{"old", "new"}, seqs: map[string]int64{"old": 1}, want: "old"},
		{name: "the second round: the new key seals", listed: []string{"new", "old"}, seqs: map[string]int64{"old": 1}, want: "new"},
		{name: "a restart with the first round's keys after the second", listed: []string{"old", "new"}, seqs: map[string]int64{"old": 1, "new": 2}, want: "new"},
		{name: "the second round's keys again", listed: []string{"new", "old"}, seqs: map[string]int64{"old": 1, "new": 2}, want: "new"},
		{name: "the old key dropped", listed: []string{"new"}, seqs: map[string]int64{"old": 1, "new": 2}, want: "new"},
		{name: "the next rotation", listed: []string{"newer", "new"}, seqs: map[string]int64{"old": 1, "new": 2}, want: "newer"},
		{name: "three keys, the oldest first", listed: []string{"old", "newer", "new"}, seqs: map[string]int64{"old": 1, "new": 2, "newer": 3}, want: "newer"},
		{name: "a new key alone, the old one lost", listed: []string{"newer"}, seqs: map[string]int64{"old": 1, "new": 2}, want: "newer"},
		{name: "a key from before the record is taken for a new one", listed: []string{"old", "new"}, seqs: map[string]int64{"new": 1}, want: "old"},
		{name: "the old key alone after the rotation", listed: []string{"old"}, seqs: map[string]int64{"old": 1, "new": 2}, refused: "lacks the server key new, which replaced old"},
		{name: "the old key with another after the rotation", listed: []string{"old", "other"}, seqs: map[string]int64{"old": 1, "new": 2}, refused: "lacks the server key new"},
	} {
		got, err := sealingKeyFor(c.listed, c.seqs)
		switch {
		case c.refused != "":
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: %v with %v: %v, %v; want refused (%s)", c.name, c.listed, c.seqs, got, err, c.refused)
			}
		case err != nil:
			t.Errorf("%s: %v with %v refused: %v", c.name, c.listed, c.seqs, err)
		case got.sealsWith != c.want:
			t.Errorf("%s: %v with %v seals with %q, want %q", c.name, c.listed, c.seqs, got.sealsWith, c.want)
		}
	}
}

// The order is the order of the records, not of the processes' clocks: a rotation's second round
// started on a host whose clock is behind the one that recorded OLD still seals with NEW, and so
// does a restart with the first round's keys (review of the change: the first version compared
// each process's wall clock).
func TestTheOrderOfTheKeysIsNotTheHostsClocks(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx := context.Background()
		oldKey, oldSealer := sealingtest.NewKey(t)
		newKey, newSealer := sealingtest.NewKey(t)
		oldID, newID := oldSealer.KeyIDs()[0], newSealer.KeyIDs()[0]
		ahead := time.Now().Add(5 * time.Minute)
		start := func(keys string, now time.Time) string {
			t.Helper()
			parsed, err := sealing.ParseKeys(keys)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sealing.New(parsed...)
			if err != nil {
				t.Fatal(err)
			}
			s, err = sealingKeyAfterRotations(ctx, db, s, now, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			return s.KeyIDs()[0]
		}
		if got := start(oldKey, ahead); got != oldID {
			t.Fatalf("the first start seals with %s, want OLD %s", got, oldID)
		}
		behind := ahead.Add(-4 * time.Minute)
		for _, c := range []struct{ keys, name string }{
			{oldKey + "," + newKey, "the first round (OLD,NEW)"},
			{newKey + "," + oldKey, "the second round (NEW,OLD)"},
			{newKey + "," + oldKey, "the second round again"},
			{oldKey + "," + newKey, "a restart with the first round's keys"},
		} {
			want := newID
			if c.name == "the first round (OLD,NEW)" {
				want = oldID
			}
			if got := start(c.keys, behind); got != want {
				t.Errorf("%s seals with %s, want %s (OLD %s, NEW %s)", c.name, got, want, oldID, newID)
			}
		}
	})
}
