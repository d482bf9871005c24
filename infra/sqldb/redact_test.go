package sqldb_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// The error of a failed connection names the database URL, which `serve`, `migrate`, `history`
// and `projections` print: its password is masked wherever the URL carries it, in the user
// info or as the `password` (or `sslpassword`) parameter pgx and libpq accept too.
func TestAFailedConnectionNamesNoPasswordOfTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a port nobody listens on: refused at once
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, url := range []string{
		"postgres://funnel:Pa55-in-userinfo@" + addr + "/funnel?sslmode=disable",
		"postgres://funnel@" + addr + "/funnel?sslmode=disable&password=Pa55-in-query",
		"postgres://funnel@" + addr + "/funnel?sslmode=disable&sslpassword=Pa55-of-the-key",
	} {
		db, err := sqldb.Open(ctx, url)
		if err == nil {
			db.Close()
			t.Fatalf("%s: connected to a closed port", url)
		}
		if strings.Contains(err.Error(), "Pa55") {
			t.Errorf("the connection error shows the database password: %v", err)
		}
	}
}
