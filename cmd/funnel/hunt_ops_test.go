//go:build unix

package main_test

// Operations defects found by black-box probing (hunt-ops, FINDINGS.md in /work/reports/ops):
// each test fails on main as it stands.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// upsertOK upserts a contact through the integration API and returns its id.
func upsertOK(t *testing.T, srv *server, fx fixture, body map[string]any) string {
	t.Helper()
	status, raw, err := srv.do(context.Background(), http.MethodPost, srv.apiURL+"/api/v1/contacts", apiHost, fx.key, body)
	var res struct {
		Contact struct{ ID string } `json:"contact"`
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(raw, &res) != nil || res.Contact.ID == "" {
		t.Fatalf("upsert %v: %d %v %s", body["email"], status, err, raw)
	}
	return res.Contact.ID
}

// eraseOK erases a contact through the operator API.
func eraseOK(t *testing.T, srv *server, fx fixture, contactID string) {
	t.Helper()
	status, raw, err := srv.do(context.Background(), http.MethodPost, srv.opURL+"/admin/v1/accounts/"+fx.accountID+"/contacts/"+contactID+"/erase", "", operatorToken, map[string]any{})
	if err != nil || status != http.StatusOK {
		t.Fatalf("erase %s: %d %v %s", contactID, status, err, raw)
	}
}

// README: `funnel projections rebuild NAME` rebuilds one read model from the log; decisions.md:
// "Rebuilding any read model after an erasure brings nothing back". A rebuild reads the log in
// windows of 8,192 positions: a contact created in one window and erased in a later one is
// written by the first window with an email key of "\x00"+id (projections/contacts.go), which
// PostgreSQL's text refuses (SQLSTATE 22021), so the rebuild of contacts fails for good on any
// PostgreSQL log of that shape.
func TestHuntOpsContactsRebuildAfterAnErasureInALaterWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		srv := startServer(t, bin, dbURL)
		fx := setUpAccount(t, srv)
		var names []string
		for i := range 100 {
			name := fmt.Sprintf("t%03d", i)
			srv.operator(t, "/admin/v1/accounts/"+fx.accountID+"/tags", map[string]any{"name": name}, "tag")
			names = append(names, name)
		}
		// 90 contacts of 101 events each: more than one window of the rebuild, and more than the
		// 50 rows a window writes as column arrays.
		var first string
		for i := range 90 {
			id := upsertOK(t, srv, fx, map[string]any{"email": fmt.Sprintf("big%d@example.com", i), "tagNames": names})
			if i == 0 {
				first = id
			}
		}
		eraseOK(t, srv, fx, first)
		srv.stop(t)
		if out, errOut, code := runKeyed(t, bin, dbURL, "projections", "rebuild", "contacts"); code != 0 || !strings.Contains(out, "swapped in") {
			t.Fatalf("projections rebuild contacts after an erasure: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// decisions.md, Erasure: "an activation's email" is personal data, and "Erasure works the same
// for contacts created before this feature existed". Migration 16 adds activations.contact_id,
// NULL on every row written before it ("`funnel projections rebuild activations` fills them",
// says only the migration's comment), and the erasure blanks an activation's email through that
// column: an activation bought before the upgrade keeps its buyer's email after the buyer's
// erasure, in GET /api/v1/checkout/activations/:token and in the database file or dump.
// Found by upgrading from 15f7b37, 52f612a and 613e374; here the pre-upgrade row is made by
// setting the column back to what migration 16 leaves in an older row.
func TestHuntOpsErasureBlanksAnActivationFromBeforeTheUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		srv := startServer(t, bin, dbURL)
		fx := setUpAccount(t, srv)
		status, raw, err := srv.do(context.Background(), http.MethodPost, srv.opURL+"/admin/v1/accounts/"+fx.accountID+"/products", "", operatorToken, map[string]any{
			"name": "App", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/activate",
			"pricingTiers": []map[string]any{{"name": "Once", "amount": 9900, "currency": "USD", "interval": "one_time"}},
		})
		var prod struct {
			Product struct {
				ID           string
				PricingTiers []struct{ ID string } `json:"pricingTiers"`
			} `json:"product"`
		}
		if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &prod) != nil {
			t.Fatalf("product: %d %v %s", status, err, raw)
		}
		const email = "legacy-buyer@example.com"
		status, raw, err = srv.do(context.Background(), http.MethodPost, srv.opURL+"/admin/v1/accounts/"+fx.accountID+"/checkout/purchases", "", operatorToken, map[string]any{
			"productId": prod.Product.ID, "pricingTierId": prod.Product.PricingTiers[0].ID, "email": email, "name": "Legacy Buyer",
		})
		var buy struct {
			Customer   struct{ ContactID string } `json:"customer"`
			Activation struct{ Token string }     `json:"activation"`
		}
		if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &buy) != nil || buy.Activation.Token == "" {
			t.Fatalf("purchase: %d %v %s", status, err, raw)
		}
		srv.stop(t)
		db := openDB(t, dbURL)
		if _, err := db.Write.Exec(`UPDATE activations SET contact_id = NULL`); err != nil { // as migration 16 leaves an older row
			t.Fatal(err)
		}
		db.Close()
		srv = startServer(t, bin, dbURL)
		eraseOK(t, srv, fx, buy.Customer.ContactID)
		status, raw, err = srv.do(context.Background(), http.MethodGet, srv.apiURL+"/api/v1/checkout/activations/"+buy.Activation.Token, apiHost, fx.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(bytes.ToLower(raw), []byte(email)) {
			t.Fatalf("after the buyer's erasure GET activation still shows the email: %d %s", status, raw)
		}
	})
}

// decisions.md, Erasure: after the answer "the SQLite file and its WAL as they are on disk ...
// contain none of those values in any form". Migrate runs ANALYZE whenever it applied a
// migration (infra/sqldb/migrate.go), so every upgrade of a SQLite database with data fills
// sqlite_stat4 with sample keys of its indexes: emails (contacts' unique key, customers_by_email).
// Nothing removes them when those contacts are erased. The upgrade is made here by marking the
// last migration unapplied, so that migrate applies it again, as a new release's would be.
func TestHuntOpsErasureLeavesNoEmailInSQLiteStatistics(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	srv := startServer(t, bin, dbURL)
	fx := setUpAccount(t, srv)
	ids := map[string]string{}
	for i := range 40 {
		email := fmt.Sprintf("sampled%02d@example.com", i)
		ids[email] = upsertOK(t, srv, fx, map[string]any{"email": email})
	}
	srv.stop(t)
	db := openDB(t, dbURL)
	if _, err := db.Write.Exec(`DELETE FROM goose_db_version WHERE version_id = (SELECT MAX(version_id) FROM goose_db_version)`); err != nil {
		t.Fatal(err)
	}
	path := db.Path()
	db.Close()
	if out, errOut, code := run(t, bin, dbURL, "migrate"); code != 0 || !strings.Contains(out, "applied") {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	srv = startServer(t, bin, dbURL)
	for _, id := range ids {
		eraseOK(t, srv, fx, id)
	}
	srv.stop(t)
	var raw []byte
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	var found []string
	for email := range ids {
		if bytes.Contains(raw, []byte(email)) {
			found = append(found, email)
		}
	}
	if len(found) > 0 {
		t.Fatalf("the SQLite file still holds %d erased emails (sqlite_stat4 samples), e.g. %s", len(found), found[0])
	}
}

// README: "On SQLite it refuses to start while another process serves the file (`sqlite:PATH
// is already served by another process (pid N)`)"; architecture.md: two would each relay,
// project and dispatch. The lock is PATH.lock beside the path as given, so a second serve
// through a symbolic link to the same file (another lock file) starts and serves it too.
func TestHuntOpsOneServePerSQLiteFileThroughALink(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := sqldbtest.URL(t, sqldb.SQLite)
	srv := startServer(t, bin, dbURL)
	path := strings.TrimPrefix(dbURL, "sqlite:")
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path+".key", link+".key"); err != nil {
		t.Fatal(err)
	}
	second := launch(t, bin, "sqlite:"+link)
	if err := second.waitReady(15 * time.Second); err == nil {
		second.stop(t)
		t.Fatalf("a second serve of %s through the link %s started and is ready", path, link)
	}
	if !strings.Contains(second.logTail(), "already served by another process") {
		t.Fatalf("a second serve through a link: want it refused as served by another process:\n%s", second.logTail())
	}
	srv.stop(t)
}
