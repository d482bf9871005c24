// Package sqldbtest gives tests a fresh, migrated database in each storage mode.
//
// PostgreSQL is reached at FUNNEL_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test);
// every call creates its own database there and drops it afterwards. Without a server the
// PostgreSQL half fails when CI=true and is skipped, with a message, everywhere else.
package sqldbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"funnel/infra/sqldb"
)

// DefaultPostgresURL is where CI and the development machines run PostgreSQL.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test"

// Dialects are the storage modes every behavioural test runs on.
var Dialects = []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres}

// Run runs fn as one subtest per storage mode.
func Run(t *testing.T, fn func(t *testing.T, dialect sqldb.Dialect)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) { fn(t, d) })
	}
}

// URL returns the URL of a fresh, empty database of the given mode, removed when the test ends.
func URL(t testing.TB, dialect sqldb.Dialect) string {
	t.Helper()
	if dialect == sqldb.SQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "funnel.db")
	}
	return postgresURL(t)
}

// Open returns a fresh, migrated database of the given mode, closed when the test ends.
func Open(t testing.TB, dialect sqldb.Dialect) *sqldb.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, URL(t, dialect))
	if err != nil {
		t.Fatalf("open %s: %v", dialect, err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", dialect, err)
	}
	return db
}

func postgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("FUNNEL_TEST_DATABASE_URL")
	if base == "" {
		base = DefaultPostgresURL
	}
	admin, err := sql.Open("pgx", base)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = admin.PingContext(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI and is not reachable at %s: %v", base, err)
		}
		t.Skipf("skipping the PostgreSQL half: no server at %s (%v); set FUNNEL_TEST_DATABASE_URL to run it", base, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "funnel_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		admin.Close()
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", base, err)
	}
	u.Path = "/" + name
	return u.String()
}
