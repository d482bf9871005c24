package sqldbtest_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A server that is up but lacks the database of FUNNEL_TEST_DATABASE_URL gets it created: the
// PostgreSQL half of the suite runs on a fresh server with nothing set up by hand.
func TestCreatePostgresDatabaseCreatesAMissingBaseDatabase(t *testing.T) {
	maintenance := baseWithDatabase(t, sqldbtest.BaseURL(), "postgres")
	admin, err := sql.Open("pgx", maintenance)
	if err == nil {
		err = admin.Ping()
	}
	if err != nil {
		sqldbtest.RequirePostgres(t, errors.Join(sqldbtest.ErrNoPostgres, err))
	}
	t.Cleanup(func() { admin.Close() }) // after the drop below

	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "funnel_base_" + hex.EncodeToString(b[:])
	t.Setenv("FUNNEL_TEST_DATABASE_URL", baseWithDatabase(t, sqldbtest.BaseURL(), name))
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})

	dbURL, drop, err := sqldbtest.CreatePostgresDatabase()
	if err != nil {
		t.Fatalf("CreatePostgresDatabase on a server without %s: %v", name, err)
	}
	var exists bool
	if err := admin.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		t.Fatalf("database %s was not created", name)
	}
	db, err := sql.Open("pgx", dbURL)
	if err == nil {
		err = db.Ping()
		db.Close()
	}
	if err != nil {
		t.Fatalf("the test's own database does not answer: %v", err)
	}
	if err := drop(); err != nil {
		t.Fatal(err)
	}

	// Once there, it is left as it is.
	if created, err := sqldbtest.CreateBaseDatabase(); err != nil || created {
		t.Fatalf("CreateBaseDatabase with the database there = %v, %v; want false, nil", created, err)
	}
}

// A server that does not answer is ErrNoPostgres, which skips the PostgreSQL half outside CI and
// fails it in CI: it is not mistaken for a missing database.
func TestCreatePostgresDatabaseReportsADownServer(t *testing.T) {
	t.Setenv("FUNNEL_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:1/test")
	if _, _, err := sqldbtest.CreatePostgresDatabase(); !errors.Is(err, sqldbtest.ErrNoPostgres) {
		t.Fatalf("CreatePostgresDatabase with no server = %v; want ErrNoPostgres", err)
	}
	if _, err := sqldbtest.CreateBaseDatabase(); !errors.Is(err, sqldbtest.ErrNoPostgres) {
		t.Fatalf("CreateBaseDatabase with no server = %v; want ErrNoPostgres", err)
	}
}

func baseWithDatabase(t *testing.T, base, database string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + database
	return u.String()
}
