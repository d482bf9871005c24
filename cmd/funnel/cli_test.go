//go:build unix

package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// run runs the binary with arguments and the database URL, and returns its output and exit code.
func run(t *testing.T, bin, dbURL string, args ...string) (string, string, int) {
	t.Helper()
	// No server key: the commands other than serve, history and rebuild do not need one.
	return runWith(t, bin, dbURL, "", args...)
}

// runKeyed is run with the server key of the database's service (none on SQLite: its key file),
// which history and rebuild open the log's sealed personal values with.
func runKeyed(t *testing.T, bin, dbURL string, args ...string) (string, string, int) {
	t.Helper()
	return runWith(t, bin, dbURL, servicetest.SecretKey(dbURL), args...)
}

func runWith(t *testing.T, bin, dbURL, secretKey string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "FUNNEL_DATABASE_URL="+dbURL, "FUNNEL_SECRET_KEY="+secretKey)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// The operator commands against the real binary: migrate, history and projections list.
func TestOperatorCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		if out, errOut, code := run(t, bin, dbURL, "migrate"); code != 0 || !strings.Contains(out, "migrations applied") {
			t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
		}
		if _, _, code := run(t, bin, dbURL, "migrate"); code != 0 {
			t.Fatal("a second migrate must do nothing and succeed")
		}
		// The commands here run without the server key (run sets none); serve on PostgreSQL
		// refuses to start without it, and says how to make one.
		if dialect == sqldb.Postgres {
			_, errOut, code := run(t, bin, dbURL, "serve")
			if code == 0 || !strings.Contains(errOut, "FUNNEL_SECRET_KEY is required with a postgres:// database") || !strings.Contains(errOut, "openssl rand -base64 32") {
				t.Fatalf("serve on PostgreSQL without FUNNEL_SECRET_KEY: exit %d\n%s", code, errOut)
			}
		}

		srv := startServer(t, bin, dbURL)
		fx := setUpAccount(t, srv)
		for _, body := range []map[string]any{
			{"email": "Hist@Example.com", "firstName": "H", "tagNames": []string{"Lead"}},
			{"email": "hist@example.com", "lastName": "Story"},
		} {
			if status, raw, err := srv.do(context.Background(), http.MethodPost, srv.apiURL+"/api/v1/contacts", apiHost, fx.key, body); err != nil || status != http.StatusOK {
				t.Fatalf("upsert: %d %v %s", status, err, raw)
			}
		}
		subscriptionID := subscribeAndRebill(t, srv, fx.accountID)
		srv.stop(t)

		out, errOut, code := runKeyed(t, bin, dbURL, "history", "--account", fx.accountID, "--email", "HIST@example.com")
		if code != 0 {
			t.Fatalf("history: exit %d\n%s", code, errOut)
		}
		if types := historyTypes(t, out, fx.accountID); strings.Join(types, ",") != "ContactCreated,TagApplied,ContactUpdated" {
			t.Fatalf("history types = %v", types)
		}
		out, errOut, code = runKeyed(t, bin, dbURL, "history", "--account", fx.accountID, "--subscription", subscriptionID)
		if code != 0 {
			t.Fatalf("history --subscription: exit %d\n%s", code, errOut)
		}
		if types := historyTypes(t, out, fx.accountID); strings.Join(types, ",") != "CheckoutPurchased,SubscriptionStarted,CheckoutRebilled,SubscriptionRenewed" {
			t.Fatalf("subscription history types = %v", types)
		}
		if _, errOut, code := run(t, bin, dbURL, "history", "--account", fx.accountID); code == 0 || !strings.Contains(errOut, "exactly one") {
			t.Fatalf("history without an entity: exit %d, %s", code, errOut)
		}
		if _, errOut, code := runKeyed(t, bin, dbURL, "history", "--account", "acc_other", "--email", "hist@example.com"); code == 0 || !strings.Contains(errOut, "no history") {
			t.Fatalf("history of another account: exit %d, %s", code, errOut)
		}

		out, errOut, code = run(t, bin, dbURL, "projections", "list")
		if code != 0 || !strings.Contains(out, "contacts") || !strings.Contains(out, "webhooks") || !strings.Contains(out, "(log head)") {
			t.Fatalf("projections list: exit %d\n%s%s", code, out, errOut)
		}
		// After a clean stop every projection is at the head, even those the last writes did not concern.
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			if fields := strings.Fields(line); !strings.HasPrefix(line, "(log head)") && len(fields) == 3 && fields[2] != "0" {
				t.Errorf("after a clean stop a projection is behind: %q", line)
			}
		}
		// A damaged read model comes back from the log.
		db := openDB(t, dbURL)
		if _, err := db.Write.Exec(`UPDATE contacts SET first_name = 'damaged'`); err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := runKeyed(t, bin, dbURL, "projections", "rebuild", "contacts"); code != 0 || !strings.Contains(out, "swapped in") {
			t.Fatalf("projections rebuild contacts: exit %d\n%s%s", code, out, errOut)
		}
		var damaged int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM contacts WHERE first_name = 'damaged'`).Scan(&damaged); err != nil || damaged != 0 {
			t.Fatalf("%d contacts still damaged after the rebuild (%v)", damaged, err)
		}
		for _, args := range [][]string{{"projections", "rebuild", "nope"}, {"projections", "rebuild", "webhooks"}, {"projections", "rebuild"}} {
			if _, _, code := run(t, bin, dbURL, args...); code == 0 {
				t.Errorf("%v succeeded", args)
			}
		}
		if _, errOut, code := run(t, bin, "mysql://nope", "migrate"); code == 0 || !strings.Contains(errOut, "sqlite: or postgres://") {
			t.Fatalf("an unsupported database url: exit %d, %s", code, errOut)
		}
	})
}

// `funnel history` without the server key (none given on PostgreSQL, or a copy of a SQLite
// database without its key file) cannot open the personal values the log keeps sealed: they
// would print as null, which is how an erased contact's values print, so an auditor would read a
// live contact as erased. It refuses instead, as `projections rebuild` does, naming the key, and
// exits 1; with the key the values show.
func TestHistoryWithoutTheServerKeyIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		srv := startServer(t, bin, dbURL)
		fx := setUpAccount(t, srv)
		if status, raw, err := srv.do(context.Background(), http.MethodPost, srv.apiURL+"/api/v1/contacts", apiHost, fx.key,
			map[string]any{"email": "grace@example.com", "firstName": "Grace"}); err != nil || status != http.StatusOK {
			t.Fatalf("upsert: %d %v %s", status, err, raw)
		}
		srv.stop(t)
		args := []string{"history", "--account", fx.accountID, "--email", "grace@example.com"}
		if out, errOut, code := runKeyed(t, bin, dbURL, args...); code != 0 || !strings.Contains(out, `"firstName":"Grace"`) {
			t.Fatalf("history with the server key: exit %d\n%s%s", code, out, errOut)
		}
		if dialect == sqldb.SQLite { // a copy of the database without its key file
			path := strings.TrimPrefix(dbURL, "sqlite:")
			if err := os.Rename(path+".key", path+".key.away"); err != nil {
				t.Fatal(err)
			}
		}
		out, errOut, code := run(t, bin, dbURL, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "the log holds sealed personal values: give the server key") {
			t.Fatalf("history without the server key: exit %d, stdout %q, stderr %q: want exit 1, nothing printed, the key asked for", code, out, errOut)
		}
	})
}

// The commands that only read the database refuse one that does not exist, or has no schema,
// instead of creating an empty one and failing on a missing table.
func TestReadingCommandsNeedAnExistingDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	missing := filepath.Join(t.TempDir(), "missing.db")
	for _, args := range [][]string{{"history", "--account", "acc_x", "--email", "a@example.com"}, {"projections", "list"}, {"projections", "rebuild", "contacts"}} {
		_, errOut, code := run(t, bin, "sqlite:"+missing, args...)
		if code == 0 || !strings.Contains(errOut, "no database at") {
			t.Errorf("%v on a missing file: exit %d, %s", args, code, errOut)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%v created %s", args, missing)
		}
	}
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		openDB(t, dbURL) // exists, but nothing migrated it
		if _, errOut, code := run(t, bin, dbURL, "projections", "list"); code == 0 || !strings.Contains(errOut, "funnel migrate") {
			t.Fatalf("projections list on an empty database: exit %d, %s", code, errOut)
		}
	})
}

// migrationFiles lists the schema's migrations in order, and the version the last one brings.
func migrationFiles(t *testing.T) ([]string, int) {
	t.Helper()
	files, err := sqldb.MigrationNames()
	if err != nil {
		t.Fatal(err)
	}
	version, err := strconv.Atoi(strings.SplitN(files[len(files)-1], "_", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return files, version
}

// historyTypes are the event types of `funnel history` output, one JSON object a line, checked
// to be in log order and of the account.
func historyTypes(t *testing.T, out, accountID string) []string {
	t.Helper()
	var types []string
	lastPos := 0.0
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		var e struct {
			Position float64
			Type     string
			Metadata struct{ AccountID string }
		}
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatalf("history line %q: %v", scanner.Text(), err)
		}
		if e.Position <= lastPos || e.Metadata.AccountID != accountID {
			t.Fatalf("history line out of order or of another account: %s", scanner.Text())
		}
		lastPos = e.Position
		types = append(types, e.Type)
	}
	return types
}

// subscribeAndRebill buys a monthly plan through the operator API, rebills it once, and returns
// the subscription's id.
func subscribeAndRebill(t *testing.T, srv *server, accountID string) string {
	t.Helper()
	checkout := "/admin/v1/accounts/" + accountID
	post := func(path string, body any, status int, into any) {
		t.Helper()
		got, raw, err := srv.do(context.Background(), http.MethodPost, srv.opURL+checkout+path, "", operatorToken, body)
		if err != nil || got != status || json.Unmarshal(raw, into) != nil {
			t.Fatalf("POST %s: status %d, %v, %s", path, got, err, raw)
		}
	}
	var product struct {
		Product struct {
			ID           string
			PricingTiers []struct{ ID string }
		}
	}
	post("/products", map[string]any{"name": "Pro", "pricingTiers": []any{
		map[string]any{"name": "Monthly", "amount": 900, "currency": "EUR", "interval": "month"}}}, http.StatusCreated, &product)
	var purchase struct{ Subscription struct{ ID string } }
	post("/checkout/purchases", map[string]any{"productId": product.Product.ID, "pricingTierId": product.Product.PricingTiers[0].ID,
		"email": "buyer@example.com"}, http.StatusCreated, &purchase)
	post("/checkout/subscriptions/"+purchase.Subscription.ID+"/rebill", map[string]any{}, http.StatusCreated, &struct{}{})
	return purchase.Subscription.ID
}

// migrate names each migration it applies, or says that the schema was up to date; serve logs
// the same at info.
func TestMigrateNamesWhatItApplies(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	files, version := migrationFiles(t)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		out, errOut, code := run(t, bin, dbURL, "migrate")
		want := ""
		for _, f := range files {
			want += "applied " + f + "\n"
		}
		want += fmt.Sprintf("migrations applied: the schema is at version %d\n", version)
		if code != 0 || out != want {
			t.Fatalf("first migrate: exit %d\n%s\nwant\n%s%s", code, out, want, errOut)
		}
		out, errOut, code = run(t, bin, dbURL, "migrate")
		if want := fmt.Sprintf("already up to date at version %d\n", version); code != 0 || out != want {
			t.Fatalf("second migrate: exit %d, %q, want %q %s", code, out, want, errOut)
		}
		srv := startServer(t, bin, dbURL)
		srv.stop(t)
		if log := srv.logTail(); !strings.Contains(log, `"msg":"schema already up to date","version":`+strconv.Itoa(version)) {
			t.Errorf("serve on a migrated database did not log that the schema was up to date:\n%s", log)
		}

		fresh := startServer(t, bin, sqldbtest.URL(t, dialect))
		fresh.stop(t)
		for _, f := range files {
			if log := fresh.logTail(); !strings.Contains(log, `"msg":"applied migration","migration":"`+f+`"`) {
				t.Errorf("serve on a new database did not log that it applied %s:\n%s", f, log)
			}
		}
	})
}

// projectionStatus runs projections list and returns each row's position and what it is behind,
// and the log's head.
func projectionStatus(t *testing.T, bin, dbURL string) (map[string][2]int64, int64) {
	t.Helper()
	// A new process reads the log's head below PostgreSQL's horizon, which a transaction of any
	// database on the server holds back (another package's test running beside this one): the
	// list is taken again until it shows the writes, for a while.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rows, head, out := projectionList(t, bin, dbURL)
		if head > 0 && len(rows) >= 10 {
			return rows, head
		}
		if time.Now().After(deadline) {
			t.Fatalf("projections list shows %d projections and head %d:\n%s", len(rows), head, out)
		}
	}
}

// projectionList runs `funnel projections list` and reads its table.
func projectionList(t *testing.T, bin, dbURL string) (map[string][2]int64, int64, string) {
	t.Helper()
	out, errOut, code := run(t, bin, dbURL, "projections", "list")
	if code != 0 {
		t.Fatalf("projections list: exit %d\n%s%s", code, out, errOut)
	}
	rows := map[string][2]int64{}
	head := int64(-1)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if rest, ok := strings.CutPrefix(line, "(log head)"); ok {
			head, _ = strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			continue
		}
		var name string
		var pos, behind int64
		if _, err := fmt.Sscan(line, &name, &pos, &behind); err != nil {
			t.Fatalf("projections list line %q: %v", line, err)
		}
		rows[name] = [2]int64{pos, behind}
	}
	return rows, head, out
}

// projections list shows no false lag: after writes that concern only some read models, every
// projection is at the log's head with nothing to apply while the service runs idle, and still
// after a crash left the checkpoints of the idle ones wherever the saver last wrote them.
func TestProjectionsListShowsNoFalseLag(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		srv := startServer(t, bin, dbURL)
		fx := setUpAccount(t, srv)
		for i := range 5 { // contacts and tags only: leads, forms, bookings … have nothing to apply
			body := map[string]any{"email": fmt.Sprintf("lag%d@example.com", i), "tagNames": []string{"VIP"}}
			if status, raw, err := srv.do(context.Background(), http.MethodPost, srv.apiURL+"/api/v1/contacts", apiHost, fx.key, body); err != nil || status != http.StatusOK {
				t.Fatalf("upsert: %d %v %s", status, err, raw)
			}
		}
		// Every projection at the head: the list is taken again while the head it reads (below
		// PostgreSQL's horizon) is still short of what the service's relay read, for a while.
		check := func(when string) {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				rows, head := projectionStatus(t, bin, dbURL)
				var lagging []string
				for name, row := range rows {
					if row != [2]int64{head, 0} {
						lagging = append(lagging, fmt.Sprintf("%s at %d, %d behind", name, row[0], row[1]))
					}
				}
				if len(lagging) == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("%s: the log head is %d; %s", when, head, strings.Join(lagging, "; "))
					return
				}
			}
		}
		check("idle")
		srv.kill(t)
		check("after a crash")
	})
}

// SQLite mode is one process: a second serve on one file refuses to start and names the process
// that serves it; the commands that only read run beside it, and so does a rebuild, while
// migrate waits for the service to stop. Once it stopped, a new one starts.
func TestOneServePerSQLiteFile(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	srv := startServer(t, bin, dbURL)
	fx := setUpAccount(t, srv)
	if status, raw, err := srv.do(context.Background(), http.MethodPost, srv.apiURL+"/api/v1/contacts", apiHost, fx.key, map[string]any{"email": "one@example.com"}); err != nil || status != http.StatusOK {
		t.Fatalf("upsert: %d %v %s", status, err, raw)
	}
	served := fmt.Sprintf("%s is already served by another process (pid %d)", dbURL, srv.cmd.Process.Pid)

	second := launch(t, bin, dbURL)
	select {
	case <-second.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("a second serve on one SQLite file is still running")
	}
	if second.waitErr == nil || !strings.Contains(second.logTail(), served) {
		t.Fatalf("a second serve: %v, want an error with %q:\n%s", second.waitErr, served, second.logTail())
	}
	if _, errOut, code := run(t, bin, dbURL, "migrate"); code == 0 || !strings.Contains(errOut, served) {
		t.Fatalf("migrate beside serve: exit %d, %s", code, errOut)
	}
	for _, args := range [][]string{{"projections", "list"}, {"history", "--account", fx.accountID, "--email", "one@example.com"}, {"projections", "rebuild", "contacts"}} {
		if out, errOut, code := run(t, bin, dbURL, args...); code != 0 {
			t.Errorf("%v beside serve: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if !srv.ready() {
		t.Fatal("the first service stopped serving")
	}

	srv.stop(t)
	startServer(t, bin, dbURL).stop(t)
	if out, errOut, code := run(t, bin, dbURL, "migrate"); code != 0 || !strings.Contains(out, "already up to date") {
		t.Fatalf("migrate once the service stopped: exit %d\n%s%s", code, out, errOut)
	}
}

// A database a newer release migrated (a downgrade, or this binary started beside newer
// processes) is refused by every command that would read or write it when one of the newer
// migrations is one older binaries must not run beside (its record, schema_compatibility): a
// binary from before migration 16 beside a newer one blanked personal values and wrote new ones
// unsealed (docs/deployment.md, "A rolling upgrade with a migration"). The error names both
// versions and says to run the newer release. Past additive migrations only, the binary runs:
// an old process restarted during a rolling upgrade comes back up; but it rebuilds no read model
// of a newer schema in any case (its rows would overwrite what the newer release's columns hold).
func TestCommandsRefuseASchemaNewerThanTheirBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	_, version := migrationFiles(t)
	refusal := fmt.Sprintf("the schema is at version %d, newer than this binary knows (its last migration is %d)", version+1, version)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		srv := startServer(t, bin, dbURL)
		fx := setUpAccount(t, srv)
		srv.stop(t)
		db := openDB(t, dbURL)
		if _, err := db.Write.Exec(`INSERT INTO goose_db_version (version_id, is_applied) SELECT MAX(version_id) + 1, true FROM goose_db_version`); err != nil {
			t.Fatal(err)
		}
		// An additive migration: the binary runs.
		if out, errOut, code := runKeyed(t, bin, dbURL, "migrate"); code != 0 {
			t.Fatalf("migrate on a schema an additive migration advanced: exit %d\n%s%s", code, out, errOut)
		}
		startServer(t, bin, dbURL).stop(t)
		rebuildRefusal := "rebuild with the release that migrated it"
		if out, errOut, code := runKeyed(t, bin, dbURL, "projections", "rebuild", "customers"); code == 0 || !strings.Contains(errOut, refusal) || !strings.Contains(errOut, rebuildRefusal) {
			t.Errorf("a rebuild on a schema an additive migration advanced: exit %d, want the refusal %q\n%s%s", code, rebuildRefusal, out, errOut)
		}
		// A breaking one: every command refuses.
		if _, err := db.Write.Exec(`UPDATE schema_compatibility SET oldest_binary = (SELECT MAX(version_id) FROM goose_db_version)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		for _, c := range []struct {
			args []string
			says string
		}{
			{[]string{"migrate"}, "run that release or a newer one"},
			{[]string{"projections", "rebuild", "customers"}, rebuildRefusal},
			{[]string{"history", "--account", fx.accountID, "--contact", "ct_any"}, "run that release or a newer one"},
		} {
			if out, errOut, code := runKeyed(t, bin, dbURL, c.args...); code == 0 || !strings.Contains(errOut, refusal) || !strings.Contains(errOut, c.says) {
				t.Errorf("%v on a schema newer than the binary's: exit %d, want the refusal %q\n%s%s", c.args, code, refusal, out, errOut)
			}
		}
		serve := launch(t, bin, dbURL)
		select {
		case <-serve.exited:
		case <-time.After(30 * time.Second):
			t.Fatal("serve on a schema newer than its binary's is still running")
		}
		if serve.waitErr == nil || !strings.Contains(serve.logTail(), refusal) {
			t.Errorf("serve on a schema newer than its binary's: %v, want the refusal %q:\n%s", serve.waitErr, refusal, serve.logTail())
		}
	})
}

// A zero webhook backoff set on purpose, by variable or flag, stops the start naming the
// variable, as a negative one does: the flags' defaults are their Value, so a 0 can only be the
// operator's, and running with the 60 s / 24 h defaults instead would be another schedule than
// the one asked for, without a word (operator-api.md: the variables set the retry schedule).
func TestServeRefusesAZeroWebhookBackoff(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"base variable", []string{"FUNNEL_WEBHOOK_BACKOFF_BASE=0s"}, nil, "FUNNEL_WEBHOOK_BACKOFF_BASE must be positive"},
		{"base flag", nil, []string{"--webhook-backoff-base", "0s"}, "FUNNEL_WEBHOOK_BACKOFF_BASE must be positive"},
		{"cap variable", []string{"FUNNEL_WEBHOOK_BACKOFF_CAP=0s", "FUNNEL_WEBHOOK_BACKOFF_BASE=1s"}, nil, "FUNNEL_WEBHOOK_BACKOFF_CAP must be positive"},
		{"cap flag", nil, []string{"--webhook-backoff-cap", "0"}, "FUNNEL_WEBHOOK_BACKOFF_CAP must be positive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, c.args...)...)
			cmd.Env = append(os.Environ(), "FUNNEL_DATABASE_URL=sqlite:"+filepath.Join(t.TempDir(), "f.db"), "FUNNEL_ADMIN_TOKEN=t", "FUNNEL_SECRET_KEY=")
			cmd.Env = append(cmd.Env, c.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("serve with %v %v started instead of refusing the zero backoff:\n%s", c.env, c.args, stderr.String())
			}
			exitErr, ok := err.(*exec.ExitError)
			if !ok || exitErr.ExitCode() != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("serve with %v %v: %v, want exit 1 and %q on stderr:\n%s", c.env, c.args, err, c.want, stderr.String())
			}
		})
	}
}
