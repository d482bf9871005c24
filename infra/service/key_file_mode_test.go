//go:build unix

package service_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/service"
)

// The SQLite key file opens every sealed activation token and webhook signing secret: one
// restored from a backup with a wider mode is narrowed to its owner when the service opens it,
// as the database's own files are, rather than left readable by every local user.
func TestAnExistingKeyFileIsReadableByItsOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "funnel.db")
	key, err := sealing.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".key", []byte(key+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+".key", 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	cfg := service.Defaults()
	cfg.DatabaseURL = "sqlite:" + path
	app, err := service.Open(context.Background(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for _, name := range []string{path, path + ".key"} {
		info, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %o after the service opened it, want 600", filepath.Base(name), perm)
		}
	}
}
