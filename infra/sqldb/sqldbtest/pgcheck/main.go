// Command pgcheck tells, before and after `make test`, whether the tests can reach the PostgreSQL
// server they create their databases on. Without it a missing server shows only as skip lines
// that `go test` prints under -v: the PostgreSQL half of the suite would vanish silently.
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
		// In CI the tests themselves fail on a missing server; say why up front too.
		fmt.Fprintf(os.Stderr, "pgcheck: %v\n", err)
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
