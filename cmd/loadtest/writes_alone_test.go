package main

import (
	"context"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The script of the upserts' writes must run on the schema the service migrates to, and write
// what an upsert writes: per upsert a person's key, a contact, and three events on the contact's
// stream at versions 1 to 3. A column renamed or a statement the schema refuses fails here, not
// in the middle of `make bench`.
func TestTheUpsertsWritesScriptRunsOnTheServicesSchema(t *testing.T) {
	bin := pgbenchPath()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("pgbench (PostgreSQL's package) is missing")
		}
		t.Skip("pgbench (PostgreSQL's package) is missing: the load script's writes-alone phase is not checked")
	}
	ctx := context.Background()
	url := sqldbtest.URL(t, sqldb.Postgres)
	db, err := sqldb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// pgbench is libpq's: the pool's parameters of pgx are not its own.
	libpqURL, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	query := libpqURL.Query()
	for name := range query {
		if strings.HasPrefix(name, "pool_") {
			query.Del(name)
		}
	}
	libpqURL.RawQuery = query.Encode()
	const clients, transactions = 2, 3
	written := 0
	for _, group := range upsertsPerTransaction {
		script := filepath.Join(t.TempDir(), "upserts.sql")
		if err := os.WriteFile(script, []byte(upsertWritesScript(group)), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-t", strconv.Itoa(transactions), "-f", script, libpqURL.String())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench, %d upserts a transaction: %v\n%s", group, err, out)
		}
		written += clients * transactions * group
	}
	count := func(query string) int {
		t.Helper()
		var n int
		if err := db.Write.QueryRowContext(ctx, query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT COUNT(*) FROM contacts`); n != written {
		t.Errorf("contacts: %d, want one per upsert, %d", n, written)
	}
	if n := count(`SELECT COUNT(*) FROM person_keys WHERE sealed_key IS NOT NULL`); n != written {
		t.Errorf("persons' keys: %d, want one per upsert, %d", n, written)
	}
	if n := count(`SELECT COUNT(*) FROM (SELECT stream_id FROM events GROUP BY stream_id
		HAVING COUNT(*) = 3 AND MIN(version) = 1 AND MAX(version) = 3 AND COUNT(DISTINCT position) = 3) AS s`); n != written {
		t.Errorf("streams of three events at versions 1 to 3: %d, want one per upsert, %d", n, written)
	}
	if n := count(`SELECT COUNT(*) FROM events e JOIN contacts c ON c.id = e.stream_id`); n != 3*written {
		t.Errorf("events on the contacts' streams: %d, want %d", n, 3*written)
	}
}
