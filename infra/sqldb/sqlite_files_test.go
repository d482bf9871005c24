//go:build unix

package sqldb_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// The files of a SQLite database hold every contact's personal data: the database, its -wal and
// -shm files and the lock file are readable by their owner only (0600), even under a umask that
// lets everyone read what is created; and a database made before this rule, with wider files, is
// narrowed when opened.
func TestSQLiteFilesAreReadableByTheirOwnerOnly(t *testing.T) {
	old := syscall.Umask(0) // the widest: files get exactly the mode they are created with
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "funnel.db")
	check := func(when string) {
		t.Helper()
		for _, name := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
			info, err := os.Stat(name)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if perm := info.Mode().Perm(); perm != 0o600 {
				t.Errorf("%s: %s has mode %o, want 600", when, filepath.Base(name), perm)
			}
		}
	}
	open := func() *sqldb.DB {
		db, err := sqldb.Open(ctx, "sqlite:"+path)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Claim(); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	check("a new database")
	db.Close()

	// Files of an older database, readable by everyone.
	for _, name := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644) // SQLite removed -wal and -shm on close
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chmod(name, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db = open()
	defer db.Close()
	check("an older database")
}
