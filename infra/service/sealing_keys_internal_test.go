package service

import "testing"

// The key a process seals with, from the keys it lists and when each first sealed
// (sealingKeyAfterRotations), through the rotation of README "Rotating the server key".
func TestTheNewestListedKeySeals(t *testing.T) {
	for _, c := range []struct {
		name        string
		listed      []string
		firstSealed map[string]int64
		want        string
	}{
		{"a first start", []string{"old"}, map[string]int64{}, "old"},
		{"the first round: the new key only opens", []string{"old", "new"}, map[string]int64{"old": 1}, "old"},
		{"the second round: the new key seals", []string{"new", "old"}, map[string]int64{"old": 1}, "new"},
		{"a restart with the first round's keys after the second round", []string{"old", "new"}, map[string]int64{"old": 1, "new": 2}, "new"},
		{"the second round's keys again", []string{"new", "old"}, map[string]int64{"old": 1, "new": 2}, "new"},
		{"the old key dropped", []string{"new"}, map[string]int64{"old": 1, "new": 2}, "new"},
		{"the old key alone again", []string{"old"}, map[string]int64{"old": 1, "new": 2}, "old"},
		{"the next rotation", []string{"newer", "new"}, map[string]int64{"old": 1, "new": 2}, "newer"},
		{"a restart with all three, the oldest first", []string{"old", "newer", "new"}, map[string]int64{"old": 1, "new": 2, "newer": 3}, "newer"},
	} {
		if got := newestSealingKey(c.listed, c.firstSealed); got != c.want {
			t.Errorf("%s: %v with %v seals with %q, want %q", c.name, c.listed, c.firstSealed, got, c.want)
		}
	}
}
