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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	url := URL(t, dialect)
	var db *sqldb.DB
	err := whileFull(func() (err error) { // the server may be full a moment (see whileFull)
		db, err = sqldb.Open(ctx, url)
		return err
	})
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
	return SizedForTest(t, url)
}

// TestPoolCap caps each pool of a PostgreSQL database opened by a test (sqldb.PoolCapParam):
// at most 16 connections a process instead of 40. `go test ./...` runs packages in parallel
// against one server, and a test may run two or three processes on one database, so uncapped
// pools under a burst of writes can exceed the stock max_connections of 100 (SQLSTATE 53300).
// The peak measured during a whole `make test` is in the Makefile.
const TestPoolCap = 8

// SizedForTest adds the test pool cap to the URL of a test's PostgreSQL database (a benchmark
// keeps the service's own pools, which it measures). A SQLite URL is returned as it is.
func SizedForTest(t testing.TB, dbURL string) string {
	if _, benchmark := t.(*testing.B); benchmark {
		return dbURL
	}
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return dbURL
	}
	q := u.Query()
	q.Set(sqldb.PoolCapParam, strconv.Itoa(TestPoolCap))
	u.RawQuery = q.Encode()
	return u.String()
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
// a function that drops it. The database the URL names (test by default) is created first if the
// server lacks it, so a fresh server needs no setup.
func CreatePostgresDatabase() (string, func() error, error) {
	base := BaseURL()
	admin, err := connectAdmin(base)
	if err != nil {
		return "", nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "funnel_test_" + hex.EncodeToString(b[:])
	if err := execWhileFull(admin, `CREATE DATABASE `+name); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("sqldbtest: create test database: %w", err)
	}
	drop := func() error {
		defer admin.Close()
		if err := execWhileFull(admin, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
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

// connectAdmin connects to the database of base, creating it first when the server answers that
// it does not exist. A server that does not answer at all is ErrNoPostgres.
func connectAdmin(base string) (*sql.DB, error) {
	admin, err := ping(base)
	if pgCode(err) == invalidCatalogName {
		if _, err = CreateBaseDatabase(); err == nil {
			admin, err = ping(base)
		}
	}
	if err != nil {
		if pgCode(err) != "" {
			// The server answered: a wrong role, a refused database... not a missing server.
			return nil, fmt.Errorf("sqldbtest: PostgreSQL at %s: %w", redacted(base), err)
		}
		return nil, fmt.Errorf("%w at %s: %v", ErrNoPostgres, redacted(base), err)
	}
	return admin, nil
}

// CreateBaseDatabase creates the database that BaseURL names if the server lacks it, connected
// to the server's maintenance database (postgres, or template1). It reports whether it created it.
func CreateBaseDatabase() (bool, error) {
	base := BaseURL()
	u, err := url.Parse(base)
	if err != nil {
		return false, fmt.Errorf("sqldbtest: parse %s: %w", redacted(base), err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return false, fmt.Errorf("sqldbtest: %s names no database", redacted(base))
	}
	conn, err := ping(base)
	if err == nil {
		conn.Close()
		return false, nil
	}
	if pgCode(err) != invalidCatalogName {
		return false, fmt.Errorf("%w at %s: %v", ErrNoPostgres, redacted(base), err)
	}
	var maintenance *sql.DB
	for _, db := range []string{"postgres", "template1"} {
		u.Path = "/" + db
		if maintenance, err = ping(u.String()); err == nil {
			break
		}
	}
	if err != nil {
		return false, fmt.Errorf("sqldbtest: create database %s: no maintenance database to connect to: %w", name, err)
	}
	defer maintenance.Close()
	err = execWhileFull(maintenance, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	switch pgCode(err) {
	case "":
		return err == nil, wrapCreate(name, err)
	case duplicateDatabase: // another package's tests created it at the same moment
		return false, nil
	default:
		return false, wrapCreate(name, err)
	}
}

func wrapCreate(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqldbtest: create database %s: %w", name, err)
}

// ping opens a one-connection handle on rawURL and checks that the server lets it in, waiting
// while the server has no connection slot free.
func ping(rawURL string) (*sql.DB, error) {
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	err = whileFull(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return db.PingContext(ctx)
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func execWhileFull(db *sql.DB, statement string) error {
	return whileFull(func() error {
		_, err := db.Exec(statement)
		return err
	})
}

// whileFull runs fn again, for up to a minute, while the server refuses it with "too many
// clients" (53300): packages tested in parallel share the server, and a test that waits a moment
// for another package's databases to go beats one that fails.
func whileFull(fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := fn()
		if pgCode(err) != tooManyConnections || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The SQLSTATEs the harness answers to.
const (
	invalidCatalogName = "3D000" // the database does not exist
	duplicateDatabase  = "42P04"
	tooManyConnections = "53300"
)

// pgCode is the SQLSTATE of a PostgreSQL error, "" for any other error or none.
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// redacted hides the password of a database URL, which a test log must not show.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable database URL)"
	}
	return u.Redacted()
}

// RefuseConnections makes the PostgreSQL database of dbURL refuse new connections and cuts those
// it has: the database away, as in a failover or a network cut. allow lets it take connections
// again; the test's end does in any case.
func RefuseConnections(t testing.TB, dbURL string) (allow func()) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if !strings.HasPrefix(name, "funnel_test_") {
		t.Fatalf("sqldbtest: %s is not a test database: it is not taken away", name)
	}
	admin, err := sql.Open("pgx", BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	set := func(allowed bool) error {
		_, err := admin.Exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS ` + strconv.FormatBool(allowed))
		return err
	}
	if err := set(false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set(true) })
	if _, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := set(true); err != nil {
			t.Errorf("sqldbtest: let %s take connections again: %v", name, err)
		}
	}
}
