//go:build unix

package sqldb_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// One SQLite file is served by one process however its URL spells it: a claim through a
// symbolic link to the file, or to its directory, is refused while the file is claimed, and
// taken once the first claim is given up.
func TestOneClaimPerSQLiteFileThroughLinks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "f.db")
	first, err := sqldb.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := first.Claim(); err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	fileLink, dirLink := filepath.Join(links, "link.db"), filepath.Join(links, "dir")
	if err := os.Symlink(path, fileLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}
	for _, spelling := range []string{fileLink, filepath.Join(dirLink, "f.db")} {
		db, err := sqldb.Open(ctx, "sqlite:"+spelling)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Claim()
		db.Close()
		if err == nil || !strings.Contains(err.Error(), "already served by another process") {
			t.Fatalf("a claim of %s through %s: %v, want it refused as served by another process", path, spelling, err)
		}
	}
	first.Close()
	db, err := sqldb.Open(ctx, "sqlite:"+fileLink)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Claim(); err != nil {
		t.Fatalf("a claim through the link once the file is free: %v", err)
	}
}
