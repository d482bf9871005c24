//go:build unix

package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// README: "On SQLite it refuses to start while another process serves the file (`sqlite:PATH
// is already served by another process (pid N)`)"; architecture.md: two would each relay,
// project and dispatch. A symbolic link to the file is the same file: a second serve through it
// is refused too (the lock is beside the file the link resolves to), with the key file linked
// beside it as an operator would (PATH.key is read beside the path as written).
func TestOneServePerSQLiteFileThroughALink(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	srv := startServer(t, bin, dbURL)
	path := strings.TrimPrefix(dbURL, "sqlite:")
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path+".key", link+".key"); err != nil {
		t.Fatal(err)
	}
	second := launch(t, bin, "sqlite:"+link)
	if err := second.waitReady(15 * time.Second); err == nil {
		second.stop(t)
		t.Fatalf("a second serve of %s through the link %s started and is ready", path, link)
	}
	if !strings.Contains(second.logTail(), "already served by another process") {
		t.Fatalf("a second serve through a link: want it refused as served by another process:\n%s", second.logTail())
	}
	srv.stop(t)
}
