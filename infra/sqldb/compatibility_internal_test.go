package sqldb

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every migration from 27 on says whether binaries before it may run beside it: one added without
// saying would be read as additive, and older binaries would run on a schema they must not.
func TestEveryNewMigrationSaysWhetherItBreaks(t *testing.T) {
	names, err := MigrationNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		version, err := strconv.ParseInt(strings.SplitN(name, "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", name, err)
		}
		if version < 27 {
			continue
		}
		if breaking, additive := slices.Contains(breakingMigrations, version), slices.Contains(additiveMigrations, version); breaking == additive {
			t.Errorf("migration %s is in breakingMigrations: %v, in additiveMigrations: %v; put it in exactly one", name, breaking, additive)
		}
	}
}
