// Command pgcheck tells, before and after `make test`, whether the tests can reach the PostgreSQL
// server they create their databases on. Without it a missing server shows only as skip lines
// that `go test` prints under -v: the PostgreSQL half of the suite would vanish silently.
//
// A server that is up but lacks the database of FUNNEL_TEST_DATABASE_URL (test by default) gets
// it created, so nothing needs setting up by hand. A server that does not answer is reported as
// down: a banner outside CI, where the PostgreSQL half is then skipped, and exit status 1 with
// CI=true, where it must run.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"

	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

func main() {
	after := flag.Bool("after", false, "print only the warning, after the tests ran")
	flag.Parse()
	if !*after {
		created, err := sqldbtest.CreateBaseDatabase()
		if created {
			fmt.Printf("PostgreSQL: created the database of %s, which the server lacked.\n", redacted(sqldbtest.BaseURL()))
		}
		if err != nil && !errors.Is(err, sqldbtest.ErrNoPostgres) {
			fmt.Fprintf(os.Stderr, "pgcheck: %v\n", err)
		}
	}
	_, drop, err := sqldbtest.CreatePostgresDatabase()
	switch {
	case err == nil:
		if dropErr := drop(); dropErr != nil {
			fmt.Fprintln(os.Stderr, dropErr)
		}
		if !*after {
			fmt.Printf("PostgreSQL: each test creates its own database (funnel_test_…) on the server of %s\n"+
				"(FUNNEL_TEST_DATABASE_URL, default %s) and drops it when it ends.\n", redacted(sqldbtest.BaseURL()), sqldbtest.DefaultPostgresURL)
		}
	case errors.Is(err, sqldbtest.ErrNoPostgres) && os.Getenv("CI") != "true":
		fmt.Printf("\n"+
			"******************************************************************************\n"+
			"* PostgreSQL is NOT reachable: the PostgreSQL half of every test is SKIPPED. *\n"+
			"******************************************************************************\n"+
			"%v\n"+
			"Start PostgreSQL (trust auth) or set FUNNEL_TEST_DATABASE_URL; in CI (CI=true) this fails the run.\n\n", err)
	default:
		// In CI the PostgreSQL half must run: stop before the tests rather than after them.
		fmt.Fprintf(os.Stderr, "pgcheck: PostgreSQL is required (CI=%s): %v\n", os.Getenv("CI"), err)
		os.Exit(1)
	}
}

// redacted hides the password of a database URL, which a terminal or a CI log must not show.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable FUNNEL_TEST_DATABASE_URL)"
	}
	return u.Redacted()
}
