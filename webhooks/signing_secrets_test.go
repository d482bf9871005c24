package webhooks_test

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/webhooks/verify"
)

// Signing secrets are kept sealed with the server key: after a subscription is created and its
// secret rotated, neither the SQLite files on disk nor any table of PostgreSQL holds them in the
// clear, while deliveries still verify with the secret the integrator was given. A subscription
// whose read model row holds its secret in the clear (written before secrets were sealed) has
// it sealed at the next start, and its deliveries verify as before.
func TestSigningSecretsAreKeptSealed(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		url := sqldbtest.URL(t, d)
		svc := servicetest.StartOn(t, url, fast)
		acc := svc.NewAccount(t)
		rcv := newReceiver(t)
		form := newForm(t, svc, acc.ID, "Signup")
		id, first := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		rotated := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+id+"/rotate-secret", "", nil).Expect(t, http.StatusOK)
		second := rotated.Object(t, "webhook")["secret"].(string)
		submit(t, svc, acc.ID, form, "sealed@example.com")
		got := rcv.waitFor(t, 1, 10*time.Second)[0]
		if got.header.Get("X-Service-Signature") != verify.ServiceSignature(second, got.body) {
			t.Fatal("the delivery does not verify with the secret the rotation gave")
		}
		if len(strings.Fields(got.header.Get("webhook-signature"))) != 2 {
			t.Fatalf("webhook-signature = %q, want the new and the previous secret's", got.header.Get("webhook-signature"))
		}
		svc.Stop()
		for _, secret := range []string{first, second} {
			if where := findInStorage(t, d, url, secret); where != "" {
				t.Fatalf("a signing secret is in the clear in %s", where)
			}
		}

		// A row as it was before secrets were sealed: its secret in the clear.
		db, err := sqldb.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		const plain = "whsec_written-before-secrets-were-sealed"
		if _, err := db.Write.Exec(`UPDATE webhook_subscriptions SET secret = $1, previous_secret = '', secrets_sealed = 0 WHERE id = $2`, plain, id); err != nil {
			t.Fatal(err)
		}
		db.Close()
		svc = servicetest.StartOn(t, url, fast)
		submit(t, svc, acc.ID, form, "again@example.com")
		got = rcv.waitFor(t, 2, 10*time.Second)[1]
		if got.header.Get("X-Service-Signature") != verify.ServiceSignature(plain, got.body) {
			t.Fatal("the delivery does not verify with the secret the row held")
		}
		svc.Stop()
		if where := findInStorage(t, d, url, plain); where != "" {
			t.Fatalf("the secret written in the clear is still in the clear in %s", where)
		}
	})
}

// findInStorage says where the database at url holds s in the clear ("" when nowhere): on SQLite
// the database file and its WAL as they are on disk, on PostgreSQL every text column of the
// tables that hold secrets.
func findInStorage(t *testing.T, d sqldb.Dialect, url, s string) string {
	t.Helper()
	if d == sqldb.SQLite {
		path := strings.TrimPrefix(url, "sqlite:")
		for _, name := range []string{path, path + "-wal"} {
			data, err := os.ReadFile(name)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte(s)) {
				return name
			}
		}
		return ""
	}
	db, err := sqldb.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`SELECT COUNT(*) FROM events WHERE data::text LIKE '%' || $1 || '%'`,
		`SELECT COUNT(*) FROM webhook_subscriptions WHERE secret LIKE '%' || $1 || '%' OR previous_secret LIKE '%' || $1 || '%'`,
		`SELECT COUNT(*) FROM idempotency_keys WHERE body::text LIKE '%' || $1 || '%'`,
	} {
		var n int
		if err := db.Read.QueryRow(q, s).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n > 0 {
			return q
		}
	}
	return ""
}

// A server key rotation keeps subscriptions working: started with FUNNEL_SECRET_KEY=NEW,OLD,
// the service seals every signing secret again with NEW, so that OLD can then be dropped and
// deliveries still verify with the secret the integrator was given.
func TestSigningSecretsSurviveAServerKeyRotation(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		oldKey, err := sealing.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		newKey, err := sealing.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		withKey := func(key string) func(*service.Config) {
			return func(c *service.Config) { fast(c); c.SecretKey = key }
		}
		url := sqldbtest.URL(t, d)
		svc := servicetest.StartOn(t, url, withKey(oldKey))
		acc := svc.NewAccount(t)
		rcv := newReceiver(t)
		form := newForm(t, svc, acc.ID, "Signup")
		id, first := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		// Two rotations of the signing secret: the first secret and the second still sign
		// webhook-signature beside the third for a day, so they must survive the key's rotation too.
		secrets := []string{first}
		for range 2 {
			rotated := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+id+"/rotate-secret", "", nil).Expect(t, http.StatusOK)
			secrets = append(secrets, rotated.Object(t, "webhook")["secret"].(string))
		}
		svc.Stop()
		servicetest.StartOn(t, url, withKey(newKey+","+oldKey)).Stop()

		svc = servicetest.StartOn(t, url, withKey(newKey))
		submit(t, svc, acc.ID, form, "rotated@example.com")
		got := rcv.waitFor(t, 1, 10*time.Second)[0]
		if got.header.Get("X-Service-Signature") != verify.ServiceSignature(secrets[2], got.body) {
			t.Fatal("after the rotation the delivery does not verify with the subscription's secret")
		}
		if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 3 {
			t.Fatalf("webhook-signature has %d signatures after the server key's rotation, want the three secrets'", n)
		}
		for i, secret := range secrets {
			if err := verify.Standard(secret, got.header, got.body, time.Minute, time.Now()); err != nil {
				t.Errorf("secret %d does not verify webhook-signature after the server key's rotation: %v", i, err)
			}
		}
	})
}
