package sqldb_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// A SQLite path is a path, even with the characters a file: URI reads otherwise (? starts a
// query, # a fragment, % an escape): the database is the file named, no other.
func TestSQLitePathsWithURICharacters(t *testing.T) {
	ctx := context.Background()
	for _, dir := range []string{"run#1", "what?", "100%", "with space"} {
		path := filepath.Join(t.TempDir(), dir, "funnel.db")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		db, err := sqldb.Open(ctx, "sqlite:"+path)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var tables int
		if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'events'`).Scan(&tables); err != nil || tables != 1 {
			t.Fatalf("%s: the reader sees %d events tables (%v)", dir, tables, err)
		}
		db.Close()
		if info, err := os.Stat(path); err != nil || info.Size() == 0 {
			t.Fatalf("%s: the database is not the file named: %v", dir, err)
		}
	}
}
