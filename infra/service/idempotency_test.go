package service_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/idempotency"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The Idempotency-Key across restarts, crashes and processes: the keys live in the database.

const leadBody = `{"contactEmail": "ada@example.com", "title": "Pilot"}`

func postLead(svc *servicetest.Service, t *testing.T, key, crmID, idemKey string) servicetest.Response {
	t.Helper()
	return svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/crms/" + crmID + "/leads", Token: key, Body: leadBody,
		Headers: map[string]string{"Idempotency-Key": idemKey}})
}

func leadIDs(t *testing.T, svc *servicetest.Service, accountID, crmID string) []string {
	t.Helper()
	var ids []string
	for _, l := range svc.Operator.Get(t, "/admin/v1/accounts/"+accountID+"/crms/"+crmID+"/leads", "").Expect(t, http.StatusOK).List(t, "leads") {
		ids = append(ids, l["id"].(string))
	}
	return ids
}

func expectSameAnswer(t *testing.T, res, first servicetest.Response) {
	t.Helper()
	if res.Status != first.Status || !bytes.Equal(res.Raw, first.Raw) || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry answered %d %s (replayed %q), want %d %s", res.Status, res.Raw, res.Header.Get("Idempotent-Replayed"), first.Status, first.Raw)
	}
}

func TestIdempotencyKeySurvivesARestart(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, d)
		first := servicetest.StartOn(t, dbURL, func(*service.Config) {})
		acc := first.NewAccount(t)
		crm := first.NewCRM(t, acc.ID, "Sales", "New")
		answer := postLead(first, t, acc.Key, crm.ID, "restart").Expect(t, http.StatusCreated)
		first.Stop()

		second := servicetest.StartOn(t, dbURL, func(*service.Config) {})
		expectSameAnswer(t, postLead(second, t, acc.Key, crm.ID, "restart"), answer)
		if ids := leadIDs(t, second, acc.ID, crm.ID); len(ids) != 1 {
			t.Fatalf("leads %v, want one", ids)
		}
	})
}

// TestRequestCutShortByACrashIsNotPerformedAgain stops a process between the append of a write
// and its answer: the write is committed, the answer never sent nor kept. A service started
// afterwards on the same database answers the retry from the write, without performing it again:
// first "in progress" while the dead attempt's lease runs, then the lead it created.
func TestRequestCutShortByACrashIsNotPerformedAgain(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		dbURL := sqldbtest.URL(t, d)
		clock := newTestClock()
		setup := servicetest.StartOn(t, dbURL, clock.configure)
		acc := setup.NewAccount(t)
		crm := setup.NewCRM(t, acc.ID, "Sales", "New")
		setup.Stop()

		// A process whose read models never move (no background loops): its write commits, then
		// waits for them to show it. It is stopped during that wait.
		cfg := service.Defaults()
		cfg.DatabaseURL, cfg.AdminToken, cfg.Now, cfg.SecretKey = dbURL, servicetest.AdminToken, clock.Now, servicetest.SecretKey(dbURL)
		doomed, err := service.Open(ctx, cfg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/api/v1/crms/"+crm.ID+"/leads", strings.NewReader(leadBody))
		req.Host = cfg.APIHost
		req.Header.Set("Authorization", "Bearer "+acc.Key)
		req.Header.Set("Idempotency-Key", "crash")
		go doomed.APIHandler().ServeHTTP(httptest.NewRecorder(), req) // it answers after the process is gone, to nobody
		waitForKeyState(t, doomed, "performed")
		doomed.Close()

		clock.Set(clock.Now().Add(idempotency.Lease / 2))
		second := servicetest.StartOn(t, dbURL, clock.configure)
		busy := postLead(second, t, acc.Key, crm.ID, "crash")
		if msg := busy.ExpectError(t, http.StatusConflict); !strings.Contains(msg, "in progress") || busy.Header.Get("Retry-After") != "1" {
			t.Fatalf("retry within the dead attempt's lease: %s", busy.Raw)
		}
		clock.Set(clock.Now().Add(idempotency.Lease))
		resumed := postLead(second, t, acc.Key, crm.ID, "crash").Expect(t, http.StatusCreated)
		ids := leadIDs(t, second, acc.ID, crm.ID)
		if len(ids) != 1 || resumed.Object(t, "lead")["id"] != ids[0] || resumed.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after the crash answered %s; leads %v", resumed.Raw, ids)
		}
		expectSameAnswer(t, postLead(second, t, acc.Key, crm.ID, "crash"), resumed)
	})
}

// waitForKeyState waits until the one key in the database reaches state.
func waitForKeyState(t *testing.T, a *service.App, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got string
		err := a.DB().Read.QueryRow(`SELECT state FROM idempotency_keys`).Scan(&got)
		if err == nil && got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key is %q (%v), want %q", got, err, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Two processes on one PostgreSQL database: requests with one key, sent to both at once, perform
// the write once.
func TestIdempotencyKeyAcrossTwoProcesses(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	first := servicetest.StartOn(t, url, func(*service.Config) {})
	second := servicetest.StartOn(t, url, func(*service.Config) {})
	acc := first.NewAccount(t)
	crm := first.NewCRM(t, acc.ID, "Sales", "New")
	// The other process knows the API key and the CRM once its relay brought them (within 250 ms).
	for deadline := time.Now().Add(10 * time.Second); second.API.Get(t, "/api/v1/crms/"+crm.ID+"/stages", acc.Key).Status != http.StatusOK; {
		if time.Now().After(deadline) {
			t.Fatal("the second process never learned the account")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for round := range 5 {
		key := "two-processes-" + string(rune('a'+round))
		answers := make([]servicetest.Response, 8)
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range answers {
			done.Go(func() {
				start.Wait()
				svc := first
				if i%2 == 1 {
					svc = second
				}
				answers[i] = postLead(svc, t, acc.Key, crm.ID, key)
			})
		}
		start.Done()
		done.Wait()
		var created []byte
		for _, res := range answers {
			switch res.Status {
			case http.StatusCreated:
				if created != nil && !bytes.Equal(created, res.Raw) {
					t.Fatalf("two answers to one key: %s and %s", created, res.Raw)
				}
				created = res.Raw
			case http.StatusConflict:
			default:
				t.Fatalf("answered %d %s", res.Status, res.Raw)
			}
		}
		if created == nil {
			t.Fatal("no process performed the write")
		}
		if ids := leadIDs(t, first, acc.ID, crm.ID); len(ids) != round+1 {
			t.Fatalf("round %d: %d leads, want %d", round, len(ids), round+1)
		}
	}
}
