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
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
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
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", dialect, err)
	}
	return db
}

func postgresURL(t testing.TB) string {
	t.Helper()
	url, drop, err := CreatePostgresDatabase()
	if err != nil {
		RequirePostgres(t, err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Logf("%v", err)
		}
	})
	return url
}

// ErrNoPostgres wraps the failure to reach the PostgreSQL server.
var ErrNoPostgres = errors.New("sqldbtest: PostgreSQL is not reachable")

// RequirePostgres ends a test that could not get a PostgreSQL database: a failure in CI
// (CI=true), a skip with the reason everywhere else.
func RequirePostgres(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoPostgres) && os.Getenv("CI") != "true" {
		t.Skipf("skipping the PostgreSQL half: %v; set FUNNEL_TEST_DATABASE_URL to run it", err)
	}
	t.Fatalf("PostgreSQL is required (CI=%s): %v", os.Getenv("CI"), err)
}

// BaseURL is the PostgreSQL server the tests create their databases on: FUNNEL_TEST_DATABASE_URL,
// or DefaultPostgresURL.
func BaseURL() string {
	if base := os.Getenv("FUNNEL_TEST_DATABASE_URL"); base != "" {
		return base
	}
	return DefaultPostgresURL
}

// CreatePostgresDatabase creates an empty database on the test server and returns its URL and
// a function that drops it.
func CreatePostgresDatabase() (string, func() error, error) {
	base := BaseURL()
	admin, err := sql.Open("pgx", base)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = admin.PingContext(ctx)
		cancel()
	}
	if err != nil {
		return "", nil, fmt.Errorf("%w at %s: %v", ErrNoPostgres, base, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "funnel_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("sqldbtest: create test database: %w", err)
	}
	drop := func() error {
		defer admin.Close()
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			return fmt.Errorf("sqldbtest: drop test database %s: %w", name, err)
		}
		return nil
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, fmt.Errorf("sqldbtest: parse %s: %w", base, err)
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}
