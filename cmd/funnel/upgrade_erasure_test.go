//go:build unix

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// decisions.md, Erasure: "an activation's email" is personal data, and "Erasure works the same
// for contacts created before this feature existed". Migration 16 gave activations their
// contact_id, NULL on every row written before it, and the erasure blanks an activation's email
// through that column: migration 24 fills it at the upgrade. The row before the upgrade is made
// here by setting the column back to NULL and marking migration 24 unapplied, as a database
// upgraded from a release before migration 16 is when this release starts on it.
func TestAnErasureAfterTheUpgradeBlanksAnActivationBoughtBefore(t *testing.T) {
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
		for _, stmt := range []string{
			`UPDATE activations SET contact_id = NULL`, // as migration 16 leaves an older row
			`DELETE FROM goose_db_version WHERE version_id >= 24`,
		} {
			if _, err := db.Write.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		srv = startServer(t, bin, dbURL)
		eraseContact(t, srv, fx, buy.Customer.ContactID)
		status, raw, err = srv.do(context.Background(), http.MethodGet, srv.apiURL+"/api/v1/checkout/activations/"+buy.Activation.Token, apiHost, fx.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(bytes.ToLower(raw), []byte(email)) {
			t.Fatalf("after the buyer's erasure GET activation still shows the email: %d %s", status, raw)
		}
		srv.stop(t)
		db = openDB(t, dbURL)
		var left int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM activations WHERE email <> '' OR contact_id IS NULL`).Scan(&left); err != nil || left != 0 {
			t.Fatalf("activations still holding an email or no contact after the erasure: %d %v", left, err)
		}
	})
}

// eraseContact erases a contact through the operator API.
func eraseContact(t *testing.T, srv *server, fx fixture, contactID string) {
	t.Helper()
	status, raw, err := srv.do(context.Background(), http.MethodPost, srv.opURL+"/admin/v1/accounts/"+fx.accountID+"/contacts/"+contactID+"/erase", "", operatorToken, map[string]any{})
	if err != nil || status != http.StatusOK {
		t.Fatalf("erase %s: %d %v %s", contactID, status, err, raw)
	}
}

// decisions.md, Erasure: after the answer "the SQLite file and its WAL as they are on disk ...
// contain none of those values in any form". Migrate analyzes the schema whenever it applied a
// migration, and SQLite's ANALYZE keeps sample keys of each index in sqlite_stat4: emails, from
// contacts' unique key and customers_by_email, which no erasure would remove. So Migrate keeps
// no samples (sqldb.DB.Analyze). The upgrade is made here by marking the last migration
// unapplied, so that migrate applies it again, as a new release's would be.
func TestAnErasureAfterAnUpgradeLeavesNoEmailInSQLiteStatistics(t *testing.T) {
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
		status, raw, err := srv.do(context.Background(), http.MethodPost, srv.apiURL+"/api/v1/contacts", apiHost, fx.key, map[string]any{"email": email})
		var res struct {
			Contact struct{ ID string } `json:"contact"`
		}
		if err != nil || status != http.StatusOK || json.Unmarshal(raw, &res) != nil || res.Contact.ID == "" {
			t.Fatalf("upsert %s: %d %v %s", email, status, err, raw)
		}
		ids[email] = res.Contact.ID
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
		eraseContact(t, srv, fx, id)
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
