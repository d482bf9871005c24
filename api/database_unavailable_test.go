package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A database that stops taking connections makes a request answer 503 with Retry-After, not
// 500, and the service answers again once the database is back. Only PostgreSQL can be made
// unreachable under a running service; for SQLite the same mapping (a file locked past its busy
// timeout) is tested on sqldb.Unavailable.
func TestAnUnreachableDatabaseAnswers503(t *testing.T) {
	dbURL := sqldbtest.URL(t, sqldb.Postgres)
	svc := servicetest.StartOn(t, dbURL, func(*service.Config) {})
	acc := svc.NewAccount(t)
	svc.API.Get(t, "/api/v1/contacts", acc.Key).Expect(t, http.StatusOK)

	allow := sqldbtest.RefuseConnections(t, dbURL)

	// Each pooled connection, cut or new, fails; no request answers 500.
	for range 3 {
		res := svc.API.Get(t, "/api/v1/contacts?email=a@example.com", acc.Key)
		if res.Status != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(res.Body["error"].(string), "retry") {
			t.Fatalf("with the database away: %d %s (Retry-After %q)", res.Status, res.Raw, res.Header.Get("Retry-After"))
		}
	}

	allow()
	deadline := time.Now().Add(10 * time.Second)
	for svc.API.Get(t, "/api/v1/contacts", acc.Key).Status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the service did not answer again once the database was back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
