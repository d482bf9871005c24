package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The documented server-key rotation (README "The server key", architecture.md "Secrets"):
// FUNNEL_SECRET_KEY=NEW,OLD everywhere until the persons' keys are sealed again with NEW (the log
// says so) and OLD's deliveries may no longer retry, then NEW alone. These tests check what an
// integrator sees once OLD is dropped.

// keyRotation is a database first served with an old server key, to be rotated to a new one.
type keyRotation struct {
	url, oldKey, newKey string
}

// newKeyRotation starts a service on a fresh database with the old key.
func newKeyRotation(t *testing.T, d sqldb.Dialect) (keyRotation, *servicetest.Service) {
	r := keyRotation{url: sqldbtest.URL(t, d)}
	r.oldKey, _ = sealingtest.NewKey(t)
	r.newKey, _ = sealingtest.NewKey(t)
	return r, servicetest.StartOn(t, r.url, func(c *service.Config) { c.SecretKey = r.oldKey })
}

// start starts a service on the rotation's database with FUNNEL_SECRET_KEY=keys.
func (r keyRotation) start(t *testing.T, keys ...string) *servicetest.Service {
	t.Helper()
	return servicetest.StartOn(t, r.url, func(c *service.Config) { c.SecretKey = strings.Join(keys, ",") })
}

// secondRound rotates as documented up to NEW sealing: a start with OLD,NEW (NEW announced),
// then one with NEW,OLD until the persons' keys are sealed with NEW, stopped.
func (r keyRotation) secondRound(t *testing.T) {
	t.Helper()
	r.start(t, r.oldKey, r.newKey).Stop()
	svc := r.start(t, r.newKey, r.oldKey)
	waitResealed(t, svc)
	svc.Stop()
}

// complete rotates as documented (secondRound), then starts with NEW alone, which it returns.
func (r keyRotation) complete(t *testing.T) *servicetest.Service {
	t.Helper()
	r.secondRound(t)
	return r.start(t, r.newKey)
}

// Found by the self-service hunt: once OLD was gone, every event of a contact created before the
// rotation made the event feed, replays, test sends and sample events answer 500, because the
// persons' keys (sealed with the server key) were never sealed again with NEW.
func TestSelfServiceWorksAfterAServerKeyRotationCompletes(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		rotation, svc := newKeyRotation(t, d)
		acc := svc.NewAccount(t)
		form, fields := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		svc.API.Post(t, "/api/v1/forms/"+form+"/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: "before.rotation@example.com"}}).
			Expect(t, http.StatusCreated)
		hook := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": sink(t), "event": "form.submitted"}).
			Expect(t, http.StatusCreated).Object(t, "subscription")["id"].(string)
		svc.Stop()

		svc = rotation.complete(t)
		events := svc.API.Get(t, "/api/v1/events", acc.Key).Expect(t, http.StatusOK).List(t, "events")
		if len(events) != 1 {
			t.Fatalf("feed after the rotation = %v", events)
		}
		if contact := events[0]["data"].(map[string]any)["contact"].(map[string]any); contact["email"] != "before.rotation@example.com" {
			t.Errorf("the submission's contact after the rotation = %v", contact)
		}
		since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/replay", acc.Key, map[string]any{"since": since}).Expect(t, http.StatusAccepted)
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/test", acc.Key, map[string]any{"type": "form.submitted"}).Expect(t, http.StatusOK)
		svc.API.Get(t, "/api/v1/webhooks/events/form.submitted", acc.Key).Expect(t, http.StatusOK)
	})
}

// An upsert of a contact created before the rotation answers 200 once OLD is dropped: the write
// opens the contact's key to seal its new values.
func TestAnUpsertOfAContactFromBeforeARotationWorksOnceTheOldKeyIsDropped(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		rotation, svc := newKeyRotation(t, d)
		acc := svc.NewAccount(t)
		id := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "early@example.com", "firstName": "Early"}).
			Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		svc.Stop()

		svc = rotation.complete(t)
		res := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "early@example.com", "lastName": "Bird"}).Expect(t, http.StatusOK)
		if c := res.Object(t, "contact"); c["id"] != id || c["firstName"] != "Early" || c["lastName"] != "Bird" || res.Body["created"] != false {
			t.Fatalf("the upsert after the rotation = %v", res.Body)
		}
	})
}

// A contact erased before the rotation stays erased through it: its key is not sealed again
// (nothing brings back a destroyed key), its values read null, and its email's next upsert makes
// a new contact; another contact's values still read.
func TestAnErasedContactStaysErasedThroughAServerKeyRotation(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		rotation, svc := newKeyRotation(t, d)
		acc := svc.NewAccount(t)
		erased := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "gone@example.com"}).
			Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		kept := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "kept@example.com"}).
			Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+erased+"/erase", "", nil).Expect(t, http.StatusOK)
		svc.Stop()

		svc = rotation.complete(t)
		var sealedKey *string
		if err := svc.App.DB().Read.QueryRowContext(context.Background(), `SELECT sealed_key FROM person_keys WHERE contact_id = $1`, erased).Scan(&sealedKey); err != nil || sealedKey != nil {
			t.Fatalf("the erased contact's key after the rotation: %v, %v", sealedKey, err)
		}
		if data := history(t, svc, acc.ID, erased)[0]["data"].(map[string]any); data["email"] != nil {
			t.Errorf("the erased contact's creation reads %v after the rotation", data)
		}
		if data := history(t, svc, acc.ID, kept)[0]["data"].(map[string]any); data["email"] != "kept@example.com" {
			t.Errorf("the kept contact's creation reads %v after the rotation", data)
		}
		again := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "gone@example.com"}).Expect(t, http.StatusOK)
		if again.Body["created"] != true || again.Object(t, "contact")["id"] == erased {
			t.Fatalf("the erased email's upsert after the rotation = %v", again.Body)
		}
	})
}

// A purchase's activation token stays in the log sealed with the key of its time (the log is
// never rewritten): once that key is dropped, the feed shows it redacted, the purchase sent
// again (its txnId) is still answered, its token redacted, not a 500, and its read models rebuild.
func TestAPurchaseFromBeforeARotationStillAnswersOnceTheOldKeyIsDropped(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		rotation, svc := newKeyRotation(t, d)
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		buy := purchaseOf(acc.ID, pro, 0, "buyer@example.com", "Buyer")
		buy.TxnID = "txn-before-rotation"
		first := buyDirect(t, svc, buy)
		if first.ActivationToken == "" {
			t.Fatal("the purchase issued no activation token")
		}
		svc.Stop()

		svc = rotation.complete(t)
		events := svc.API.Get(t, "/api/v1/events?types=checkout.purchased", acc.Key).Expect(t, http.StatusOK).List(t, "events")
		if len(events) != 1 {
			t.Fatalf("feed after the rotation = %v", events)
		}
		data := events[0]["data"].(map[string]any)
		if a := data["activation"].(map[string]any); a["token"] != domain.RedactedSecret {
			t.Errorf("the old purchase's activation after the rotation = %v, want the token redacted", a)
		}
		if c := data["contact"].(map[string]any); c["email"] != "buyer@example.com" {
			t.Errorf("the old purchase's contact after the rotation = %v", c)
		}
		again := buyDirect(t, svc, buy)
		if !again.AlreadyRecorded || again.TransactionID != first.TransactionID || again.ActivationToken != domain.RedactedSecret {
			t.Fatalf("the purchase sent again after the rotation = %+v", again)
		}
		// The read models of the purchase rebuild from the log with NEW alone (`funnel projections
		// rebuild`), the buyer's values opened, the token kept sealed as the log holds it.
		for _, name := range []string{"contacts", "customers", "transactions", "activations", "subscriptions"} {
			if _, err := service.Rebuild(context.Background(), svc.App.DB(), rotation.newKey, name, nil); err != nil {
				t.Errorf("rebuild %s after the rotation: %v", name, err)
			}
		}
		if c := contactByEmail(t, svc, acc.Key, "buyer@example.com"); c == nil || c["id"] != first.ContactID {
			t.Errorf("the buyer after the rebuild: %v", c)
		}
	})
}

// A process started again with the keys of the rotation's first round (OLD,NEW) once others ran
// with NEW,OLD seals with NEW, the newer key it lists: it seals neither the persons' keys nor the
// signing secrets back with OLD, so that nothing is lost when OLD is dropped. Before, it sealed
// them back (and its new contacts' keys with OLD), and once OLD was dropped those persons' values
// and that subscription's secret opened no more.
func TestAProcessStartedAgainWithTheKeysOfBeforeARotationSealsWithTheNewerKey(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		rotation, svc := newKeyRotation(t, d)
		acc := svc.NewAccount(t)
		before := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "before@example.com", "firstName": "Before"}).
			Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		hook := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": sink(t), "event": "form.submitted"}).
			Expect(t, http.StatusCreated).Object(t, "subscription")["id"].(string)
		svc.Stop()

		rotation.secondRound(t)

		// An orchestrator restarts a process with its settings of the first round.
		svc = rotation.start(t, rotation.oldKey, rotation.newKey)
		waitResealed(t, svc)
		during := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "during@example.com", "firstName": "During"}).
			Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		svc.Stop()

		svc = rotation.start(t, rotation.newKey)
		for id, email := range map[string]string{before: "before@example.com", during: "during@example.com"} {
			if data := history(t, svc, acc.ID, id)[0]["data"].(map[string]any); data["email"] != email {
				t.Errorf("%s's creation reads %v once OLD is dropped", email, data)
			}
		}
		res := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "before@example.com", "lastName": "Rotation"}).Expect(t, http.StatusOK)
		if c := res.Object(t, "contact"); c["id"] != before || c["firstName"] != "Before" {
			t.Errorf("the upsert once OLD is dropped = %v", res.Body)
		}
		svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/test", acc.Key, map[string]any{"type": "form.submitted"}).Expect(t, http.StatusOK)
	})
}

// waitResealed waits until svc sealed the persons' keys again with its first key.
func waitResealed(t *testing.T, svc *servicetest.Service) {
	t.Helper()
	select {
	case <-svc.App.PersonKeysResealed():
	case <-time.After(30 * time.Second):
		t.Fatal("the persons' keys were not sealed again")
	}
}

// Rolled back the way it was rolled out (NEW,OLD, then OLD,NEW, which keeps sealing with NEW),
// then OLD alone: the start refuses, naming NEW, rather than serve persons whose keys NEW sealed
// and stop at their events (review of the change).
func TestAStartWithoutTheKeyThatReplacedItsOwnIsRefused(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		rotation, svc := newKeyRotation(t, d)
		acc := svc.NewAccount(t)
		svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "before@example.com"}).Expect(t, http.StatusOK)
		svc.Stop()
		rotation.secondRound(t)
		rotation.start(t, rotation.oldKey, rotation.newKey).Stop()

		cfg := service.Defaults()
		cfg.DatabaseURL, cfg.SecretKey, cfg.AdminToken = rotation.url, rotation.oldKey, servicetest.AdminToken
		a, err := service.Open(context.Background(), cfg, zap.NewNop())
		if err == nil {
			a.Close()
			t.Fatal("a start with OLD alone after the rotation to NEW was not refused")
		}
		if newID := keyID(t, rotation.newKey); !strings.Contains(err.Error(), "lacks the server key "+newID) {
			t.Fatalf("the refusal = %v, want it to name NEW (%s)", err, newID)
		}
	})
}

// A rotation finished before the record began (migration 28), then a restart with that
// rotation's first-round settings (OLD,NEW): the record cannot tell OLD from a new key, so OLD
// seals again and becomes the newest (a limit, docs/architecture.md "Secrets"). Nothing is lost
// unnoticed: a start without OLD is refused, naming it, and the contacts read while both keys are
// listed (review of the change).
func TestAKeyFromBeforeTheRecordCannotBeDroppedUnnoticed(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		rotation, svc := newKeyRotation(t, d)
		acc := svc.NewAccount(t)
		id := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "before@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		svc.Stop()
		svc = rotation.complete(t)
		// As if the rotation had finished before the upgrade: the record begins with NEW alone.
		if _, err := svc.App.DB().Write.ExecContext(context.Background(), `DELETE FROM sealing_keys`); err != nil {
			t.Fatal(err)
		}
		svc.Stop()
		rotation.start(t, rotation.newKey).Stop()
		svc = rotation.start(t, rotation.oldKey, rotation.newKey)
		waitResealed(t, svc)
		svc.Stop()

		cfg := service.Defaults()
		cfg.DatabaseURL, cfg.SecretKey, cfg.AdminToken = rotation.url, rotation.newKey, servicetest.AdminToken
		if a, err := service.Open(context.Background(), cfg, zap.NewNop()); err == nil {
			a.Close()
			t.Fatal("a start with NEW alone was not refused, though OLD sealed after it")
		} else if oldID := keyID(t, rotation.oldKey); !strings.Contains(err.Error(), "lacks the server key "+oldID) {
			t.Fatalf("the refusal = %v, want it to name OLD (%s)", err, oldID)
		}
		svc = rotation.start(t, rotation.newKey, rotation.oldKey)
		if data := history(t, svc, acc.ID, id)[0]["data"].(map[string]any); data["email"] != "before@example.com" {
			t.Errorf("the contact's creation reads %v with both keys listed", data)
		}
	})
}

// keyID is the id of a server key written in base64.
func keyID(t *testing.T, key string) string {
	t.Helper()
	k, err := sealing.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return k.ID()
}
