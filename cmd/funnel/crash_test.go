//go:build unix

package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// TestCrashLosesNoAcknowledgedWrite is the crash test of issue 2. It proves, in both storage
// modes and against the real binary, that:
//
//   - a write the API answered with 200 survives a kill -9 that hits while other writes are in
//     flight: after a restart on the same database the contact shows exactly the state of its
//     last acknowledged write, or of the one write to it that was still unanswered at the kill
//     (that write either committed as a whole or not at all: nothing half-applied);
//   - the service starts again on the crashed database, catches up and keeps serving writes;
//   - the read models left behind by the crash and the restart equal, row by row and timestamp by
//     timestamp, the read models that the projections rebuild from a copy of the event log alone
//     (DESIGN.md invariants 1 and 5: nothing applied twice, nothing skipped), even when the
//     rebuilding process is itself killed at a random moment and started again.
//
// What it cannot prove: durability against a power cut (a killed process leaves the operating
// system's buffers to reach the disk), and several processes on one PostgreSQL database.
func TestCrashLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		start := time.Now()
		dbURL := sqldbtest.URL(t, dialect)

		srv := startServer(t, bin, dbURL)
		fx := setUpAccount(t, srv)

		killAfter := time.Duration(300+rand.IntN(501)) * time.Millisecond
		writers := writeUntilKilled(t, srv, fx, 8, killAfter)
		if t.Failed() {
			return
		}

		srv = startServer(t, bin, dbURL)
		present := checkWritesSurvived(t, srv, fx, writers)
		checkAPIStillWrites(t, srv, fx)
		srv.stop(t)
		if t.Failed() {
			return
		}
		checkContactRows(t, dbURL, fx, present)

		// Rebuild: a fresh database that holds only the log, projected by the binary from scratch.
		// The first run of the rebuild is killed at a random moment of its start (migrations,
		// catch-up), so that the projections' own crash safety is part of what is compared.
		// The log's personal values are sealed under the persons' keys, themselves sealed with the
		// server key: the copy takes both (an operator's backup holds them too).
		rebuiltURL := sqldbtest.URL(t, dialect)
		copyEventLog(t, dbURL, rebuiltURL)
		sameKey := "FUNNEL_SECRET_KEY=" + servicetest.SecretKey(dbURL)
		killRebuildMidway(t, launch(t, bin, rebuiltURL, sameKey), rebuiltURL, time.Duration(20+rand.IntN(181))*time.Millisecond)
		rebuilt := startServer(t, bin, rebuiltURL, sameKey)
		rebuilt.stop(t)
		compareReadModels(t, dbURL, rebuiltURL)
		t.Logf("%s: done in %s", dialect, time.Since(start).Round(time.Millisecond))
	})
}

// Tags and custom field the writers set; Lead and VIP exist, Ghost does not (an unmatched name
// must change nothing).
var tagNames = []string{"Lead", "VIP"}

const apiHost = "api.localhost"

// fixture is the account the writers write to.
type fixture struct {
	accountID string
	key       string
	tagIDs    map[string]string // by name
	companyID string            // the custom field
}

// contactWrite is one POST /api/v1/contacts a writer sent.
type contactWrite struct {
	email     string // as sent (updates send it in another case)
	firstName string // unique per write: tells which write a stored contact reflects
	lastName  *string
	company   *string
	tags      []string // names
}

// contactState is what a contact should look like after a sequence of writes.
type contactState struct {
	FirstName    string
	LastName     string
	TagIDs       []string
	CustomFields map[string]string
}

func (fx fixture) fold(writes []contactWrite) contactState {
	s := contactState{TagIDs: []string{}, CustomFields: map[string]string{}}
	for _, w := range writes {
		s.FirstName = w.firstName
		if w.lastName != nil {
			s.LastName = *w.lastName
		}
		if w.company != nil {
			s.CustomFields[fx.companyID] = *w.company
		}
		for _, name := range w.tags {
			if id, ok := fx.tagIDs[name]; ok && !slices.Contains(s.TagIDs, id) {
				s.TagIDs = append(s.TagIDs, id)
			}
		}
	}
	return s
}

// writer is what one writer goroutine did: the writes answered 200, per contact (keyed by the
// email of the creating write), and the one write that was unanswered when the process died.
type writer struct {
	emails      []string // in creation order
	acked       map[string][]contactWrite
	inFlight    *contactWrite
	inFlightKey string // the contact inFlight is for
	total       int
}

// writeUntilKilled runs n writers against srv and kills the process with SIGKILL after d of
// writes, while they write. Every writer stops at its first failed request, which is the one in
// flight at the kill; a failure before the kill fails the test.
func writeUntilKilled(t *testing.T, srv *server, fx fixture, n int, d time.Duration) []*writer {
	t.Helper()
	var killing atomic.Bool
	writers := make([]*writer, n)
	var wg, warm sync.WaitGroup // warm: every writer has had its first answer
	warm.Add(n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range writers {
		w := &writer{acked: map[string][]contactWrite{}}
		writers[i] = w
		rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := 0; ctx.Err() == nil; op++ {
				key, write := nextWrite(rng, i, op, w)
				status, body, err := srv.do(ctx, http.MethodPost, srv.apiURL+"/api/v1/contacts", apiHost, fx.key, write.body(fx))
				if err == nil && status == http.StatusOK {
					if w.total == 0 {
						warm.Done()
					}
					w.total++
					if _, known := w.acked[key]; !known {
						w.emails = append(w.emails, key)
					}
					w.acked[key] = append(w.acked[key], write)
					// Read your writes: the answer shows the contact with this write applied.
					if got, err := decodeContact(body, key); err != nil || !equalState(got, fx.fold(w.acked[key])) {
						t.Errorf("writer %d: the answer to %+v shows %+v (%v), want %+v", i, write, got, err, fx.fold(w.acked[key]))
					}
					continue
				}
				w.inFlight, w.inFlightKey = &write, key
				if w.total == 0 {
					warm.Done()
				}
				if !killing.Load() {
					t.Errorf("writer %d: a write failed before the kill: status %d, %v, %s", i, status, err, body)
				}
				return
			}
		}()
	}
	// The first write of each writer opens connections (HTTP, and in the server the database
	// pool); the delay counts from when all of them write at full speed.
	warm.Wait()
	time.Sleep(d)
	killing.Store(true)
	srv.kill(t)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("writers still running 30s after the kill")
	}
	acked, inFlight := 0, 0
	for _, w := range writers {
		acked += w.total
		if w.inFlight != nil {
			inFlight++
		}
	}
	t.Logf("killed after %s: %d writes acknowledged, %d unanswered", d, acked, inFlight)
	if acked < 4*n {
		t.Fatalf("only %d writes were acknowledged before the kill: the test proved too little", acked)
	}
	return writers
}

// nextWrite picks a writer's next write: a new contact (first writes, and 40% after), or an update
// of one of its own contacts, sent with the email in upper case. Each contact has one writer, so
// its writes are ordered. It returns the contact's key (the creating email) and the write.
func nextWrite(rng *rand.Rand, writer, op int, w *writer) (string, contactWrite) {
	wr := contactWrite{firstName: fmt.Sprintf("w%d-op%d", writer, op)}
	key := ""
	if len(w.emails) == 0 || rng.IntN(10) < 4 {
		key = fmt.Sprintf("Writer%d.Contact%d@Crash.example.com", writer, op)
		wr.email = key
	} else {
		key = w.emails[rng.IntN(len(w.emails))]
		wr.email = strings.ToUpper(key)
	}
	if rng.IntN(10) < 3 {
		v := "last-" + wr.firstName
		wr.lastName = &v
	}
	if rng.IntN(10) < 3 {
		v := "company-" + wr.firstName
		wr.company = &v
	}
	for _, name := range append(slices.Clone(tagNames), "Ghost") {
		if rng.IntN(10) < 3 {
			wr.tags = append(wr.tags, name)
		}
	}
	return key, wr
}

func (w contactWrite) body(fx fixture) map[string]any {
	b := map[string]any{"email": w.email, "firstName": w.firstName}
	if w.lastName != nil {
		b["lastName"] = *w.lastName
	}
	if w.company != nil {
		b["customFields"] = map[string]string{fx.companyID: *w.company}
	}
	if w.tags != nil {
		b["tagNames"] = w.tags
	}
	return b
}

// checkWritesSurvived reads every contact any writer wrote through the API and checks it against
// what was acknowledged. It returns the emails (lower case) of the contacts that exist.
func checkWritesSurvived(t *testing.T, srv *server, fx fixture, writers []*writer) map[string]bool {
	t.Helper()
	type check struct {
		key      string
		options  []contactState // the states the contact may honestly be in: acknowledged first
		absentOK bool           // only its creation was sent, unanswered
	}
	var checks []check
	for _, w := range writers {
		for _, key := range w.emails {
			acked := w.acked[key]
			c := check{key: key, options: []contactState{fx.fold(acked)}}
			if w.inFlight != nil && w.inFlightKey == key {
				c.options = append(c.options, fx.fold(append(slices.Clone(acked), *w.inFlight)))
			}
			checks = append(checks, c)
		}
		if w.inFlight != nil && w.acked[w.inFlightKey] == nil { // a creation that was unanswered
			checks = append(checks, check{key: w.inFlightKey, options: []contactState{fx.fold([]contactWrite{*w.inFlight})}, absentOK: true})
		}
	}

	var mu sync.Mutex
	present := map[string]bool{}
	inFlightLanded := 0
	jobs := make(chan check)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				got, found, err := srv.contactByEmail(fx, c.key)
				if err != nil {
					t.Errorf("%s: %v", c.key, err)
					continue
				}
				if !found {
					if !c.absentOK {
						t.Errorf("LOST: %s was created with a 200 answer and is gone after the crash", c.key)
					}
					continue
				}
				i := slices.IndexFunc(c.options, func(s contactState) bool { return s.FirstName == got.FirstName })
				if i < 0 {
					t.Errorf("%s: firstName %q matches no acknowledged or in-flight write (want one of %v)", c.key, got.FirstName, c.options)
					continue
				}
				if want := c.options[i]; !equalState(got, want) {
					t.Errorf("%s: after the crash\n got  %+v\n want %+v", c.key, got, want)
				}
				mu.Lock()
				present[strings.ToLower(c.key)] = true
				if i > 0 || c.absentOK {
					inFlightLanded++
				}
				mu.Unlock()
			}
		}()
	}
	for _, c := range checks {
		jobs <- c
	}
	close(jobs)
	wg.Wait()
	t.Logf("checked %d contacts after the restart; %d unanswered writes had committed", len(checks), inFlightLanded)
	return present
}

func equalState(a, b contactState) bool {
	if len(a.CustomFields) != len(b.CustomFields) {
		return false
	}
	for k, v := range a.CustomFields {
		if b.CustomFields[k] != v {
			return false
		}
	}
	return a.FirstName == b.FirstName && a.LastName == b.LastName && slices.Equal(a.TagIDs, b.TagIDs)
}

// checkAPIStillWrites creates a contact and updates it after the restart.
func checkAPIStillWrites(t *testing.T, srv *server, fx fixture) {
	t.Helper()
	ctx := context.Background()
	for i, body := range []map[string]any{
		{"email": "after.restart@example.com", "firstName": "After", "tagNames": []string{"Lead"}},
		{"email": "AFTER.RESTART@example.com", "firstName": "Again", "tagNames": []string{"VIP"}},
	} {
		status, raw, err := srv.do(ctx, http.MethodPost, srv.apiURL+"/api/v1/contacts", apiHost, fx.key, body)
		if err != nil || status != http.StatusOK {
			t.Fatalf("upsert %d after the restart: status %d, %v, %s", i, status, err, raw)
		}
	}
	got, found, err := srv.contactByEmail(fx, "after.restart@example.com")
	want := contactState{FirstName: "Again", TagIDs: []string{fx.tagIDs["Lead"], fx.tagIDs["VIP"]}, CustomFields: map[string]string{}}
	if err != nil || !found || !equalState(got, want) {
		t.Fatalf("contact written after the restart = %+v (found %v, %v), want %+v", got, found, err, want)
	}
}

// checkContactRows checks that the contacts read model holds exactly the contacts the API showed:
// none that no writer asked for.
func checkContactRows(t *testing.T, dbURL string, fx fixture, present map[string]bool) {
	t.Helper()
	db := openDB(t, dbURL)
	rows, err := db.Read.Query(`SELECT email_key FROM contacts WHERE account_id = $1`, fx.accountID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			t.Fatal(err)
		}
		if key == "after.restart@example.com" {
			continue
		}
		n++
		if !present[key] {
			t.Errorf("the contacts table holds %s, which the API did not show or no writer wrote", key)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(present) {
		t.Errorf("the contacts table holds %d of the writers' contacts, the API showed %d", n, len(present))
	}
}

// copyEventLog copies the events of one database into a freshly migrated one, with the persons'
// keys that seal their personal values (and, on SQLite, the server key file): what a rebuild
// starts from.
func copyEventLog(t *testing.T, fromURL, toURL string) {
	t.Helper()
	ctx := context.Background()
	from := openDB(t, fromURL)
	to := openDB(t, toURL)
	if _, err := to.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := from.Read.QueryContext(ctx, `SELECT position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata FROM events ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	tx, err := to.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	insert, err := tx.PrepareContext(ctx, `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var (
			position, version, occurredAt                     int64
			eventID, streamID, typ, accountID, data, metadata string
			schemaVersion                                     int
			contactID, subscriptionID                         sql.NullString
		)
		if err := rows.Scan(&position, &eventID, &streamID, &version, &typ, &schemaVersion, &occurredAt, &accountID, &contactID, &subscriptionID, &data, &metadata); err != nil {
			t.Fatal(err)
		}
		if _, err := insert.ExecContext(ctx, position, eventID, streamID, version, typ, schemaVersion, occurredAt, accountID, contactID, subscriptionID, data, metadata); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	keys, err := from.Read.QueryContext(ctx, `SELECT first_position, contact_id, account_id, sealed_key, erased_at FROM person_key_rows`)
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	for keys.Next() {
		var firstPosition int64
		var contactID, accountID string
		var sealedKey sql.NullString
		var erasedAt sql.NullInt64
		if err := keys.Scan(&firstPosition, &contactID, &accountID, &sealedKey, &erasedAt); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key, erased_at) VALUES ($1, $2, $3, $4, $5)`, firstPosition, contactID, accountID, sealedKey, erasedAt); err != nil {
			t.Fatal(err)
		}
	}
	if err := keys.Err(); err != nil {
		t.Fatal(err)
	}
	if from.Dialect == sqldb.SQLite {
		key, err := os.ReadFile(from.Path() + ".key")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to.Path()+".key", key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if to.Dialect == sqldb.Postgres {
		// The positions go on after the copied ones, as they would have in the first database.
		if _, err := tx.ExecContext(ctx, `SELECT setval('events_position_seq', GREATEST((SELECT MAX(position) FROM events), 1))`); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuilding from %d events", n)
}

// killRebuildMidway kills a rebuilding process with SIGKILL after d, and tells how far its
// projections had got.
func killRebuildMidway(t *testing.T, srv *server, dbURL string, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	wasReady := srv.ready()
	select {
	case <-srv.exited: // it could not start; the rebuild below starts it again
		if !strings.Contains(srv.logTail(), "address already in use") {
			t.Fatalf("the rebuild exited by itself: %v\n%s", srv.waitErr, srv.logTail())
		}
		return
	default:
	}
	srv.kill(t)
	db := openDB(t, dbURL)
	var head int64
	var checkpoints string
	if err := db.Read.QueryRow(`SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Read.Query(`SELECT name, position FROM projection_checkpoints ORDER BY name`)
	if err == nil { // no table yet: killed before its migrations
		defer rows.Close()
		for rows.Next() {
			var name string
			var pos int64
			if err := rows.Scan(&name, &pos); err != nil {
				t.Fatal(err)
			}
			checkpoints += fmt.Sprintf(" %s=%d", name, pos)
		}
	}
	t.Logf("killed the rebuild after %s (ready: %v), log head %d, checkpoints:%s", d, wasReady, head, checkpoints)
}

// compareReadModels dumps every read-model table of both databases, ordered by primary key, and
// requires them to be equal in every column: all of them, timestamps included, come from events
// (projections/*.go), so a rebuild reproduces them exactly.
func compareReadModels(t *testing.T, liveURL, rebuiltURL string) {
	t.Helper()
	live, rebuilt := openDB(t, liveURL), openDB(t, rebuiltURL)
	for _, table := range service.RebuildableTables(live) {
		a, b := sqldbtest.Dump(t, live.Read, table, "id"), sqldbtest.Dump(t, rebuilt.Read, table, "id")
		if slices.Equal(a, b) {
			t.Logf("%s: %d rows equal the rebuild", table, len(a))
			continue
		}
		t.Errorf("%s: the read model differs from its rebuild from the log (%d rows live, %d rebuilt; - live, + rebuilt):\n%s",
			table, len(a), len(b), sqldbtest.DiffRows(a, b, 10))
	}
}

func openDB(t *testing.T, dbURL string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// setUpAccount creates the account, its two tags, a custom field and a key through the
// operator API.
func setUpAccount(t *testing.T, srv *server) fixture {
	t.Helper()
	var fx fixture
	fx.accountID = srv.operator(t, "/admin/v1/accounts", map[string]any{"name": "Crash test"}, "account")
	fx.tagIDs = map[string]string{}
	for _, name := range tagNames {
		fx.tagIDs[name] = srv.operator(t, "/admin/v1/accounts/"+fx.accountID+"/tags", map[string]any{"name": name}, "tag")
	}
	fx.companyID = srv.operator(t, "/admin/v1/accounts/"+fx.accountID+"/custom-fields", map[string]any{"name": "Company"}, "customField")
	status, raw, err := srv.do(context.Background(), http.MethodPost, srv.opURL+"/admin/v1/accounts/"+fx.accountID+"/api-keys", "", operatorToken, map[string]any{})
	var res struct {
		APIKey struct{ Key string } `json:"apiKey"`
	}
	if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &res) != nil || res.APIKey.Key == "" {
		t.Fatalf("issue key: status %d, %v, %s", status, err, raw)
	}
	fx.key = res.APIKey.Key
	return fx
}

// --- the process ---

const operatorToken = "crash-test-operator-token"

// server is one run of the binary.
type server struct {
	cmd     *exec.Cmd
	apiURL  string
	opURL   string
	logPath string
	exited  chan struct{}
	waitErr error
	client  *http.Client
}

// buildBinary builds cmd/funnel once, within the test's deadline.
func buildBinary(t *testing.T) string {
	t.Helper()
	return buildPackage(t, ".", "funnel")
}

// buildPackage builds a main package of the module (its path from cmd/funnel) into a binary of
// that name, with more go build flags (-tags ...), within the test's deadline.
func buildPackage(t *testing.T, pkg, name string, flags ...string) string {
	t.Helper()
	timeout := 5 * time.Minute
	if deadline, ok := t.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline)-30*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	bin := filepath.Join(t.TempDir(), name)
	started := time.Now()
	args := append(append([]string{"build", "-o", bin}, flags...), pkg)
	out, err := exec.CommandContext(ctx, goTool(), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("built %s in %s", name, time.Since(started).Round(time.Millisecond))
	return bin
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// startServer starts the binary on a database and waits until /readyz answers 200. It picks free
// loopback ports, and picks again if another process took one meanwhile.
func startServer(t *testing.T, bin, dbURL string, env ...string) *server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		srv := launch(t, bin, dbURL, env...)
		err := srv.waitReady(30 * time.Second)
		if err == nil {
			return srv
		}
		if attempt == 3 || !strings.Contains(srv.logTail(), "address already in use") {
			t.Fatalf("start %s: %v\n%s", bin, err, srv.logTail())
		}
	}
}

// launch starts the binary on a database, killed when the test ends if it still runs.
func launch(t *testing.T, bin, dbURL string, env ...string) *server {
	t.Helper()
	return launchServe(t, bin, dbURL, nil, env...)
}

// launchServe is launch with flags for serve (--demo).
func launchServe(t *testing.T, bin, dbURL string, flags []string, env ...string) *server {
	t.Helper()
	apiAddr, opAddr := freeAddr(t), freeAddr(t)
	logFile, err := os.CreateTemp(t.TempDir(), "funnel-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, append([]string{"serve"}, flags...)...)
	cmd.Env = append(os.Environ(),
		"FUNNEL_ADDR="+apiAddr,
		"FUNNEL_ADMIN_ADDR="+opAddr,
		"FUNNEL_API_HOST="+apiHost,
		"FUNNEL_ADMIN_TOKEN="+operatorToken,
		"FUNNEL_DATABASE_URL="+dbURL,
		"FUNNEL_RATE_LIMITS=off",
		"FUNNEL_LOG_LEVEL=info",
		"FUNNEL_REDIS_URL=",
		// PostgreSQL needs the server key, the same one at every start; SQLite makes its key file.
		"FUNNEL_SECRET_KEY="+servicetest.SecretKey(dbURL),
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	srv := &server{
		cmd: cmd, apiURL: "http://" + apiAddr, opURL: "http://" + opAddr, logPath: logFile.Name(), exited: make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			Proxy:               nil, // loopback only, whatever the environment says
			MaxIdleConnsPerHost: 32,
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		}},
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		srv.waitErr = cmd.Wait()
		close(srv.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-srv.exited:
		default:
			_ = cmd.Process.Kill()
			<-srv.exited
		}
		srv.client.CloseIdleConnections()
		if t.Failed() {
			t.Logf("log of the process on %s:\n%s", opAddr, srv.logTail())
		}
	})
	return srv
}

// waitReady polls GET /readyz until it answers 200.
func (s *server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("the process exited before it was ready: %v", s.waitErr)
		default:
		}
		if s.ready() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = s.cmd.Process.Kill()
	return fmt.Errorf("not ready within %s", timeout)
}

func (s *server) ready() bool {
	status, _, err := s.do(context.Background(), http.MethodGet, s.opURL+"/readyz", "", "", nil)
	return err == nil && status == http.StatusOK
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// kill ends the process with SIGKILL: no shutdown code runs.
func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v (exit: %v)\n%s", err, s.waitErr, s.logTail())
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not die of SIGKILL within 10s")
	}
	s.client.CloseIdleConnections()
}

// stop ends the process with SIGTERM and requires a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	// A connection the client dialed but never used would hold up http.Server.Shutdown for 5s.
	s.client.CloseIdleConnections()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-s.exited:
		if s.waitErr != nil {
			t.Errorf("the process did not exit cleanly on SIGTERM: %v\n%s", s.waitErr, s.logTail())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the process did not stop within 20s of SIGTERM")
	}
	s.client.CloseIdleConnections()
}

func (s *server) logTail() string {
	if s == nil {
		return ""
	}
	raw, _ := os.ReadFile(s.logPath)
	if len(raw) > 8000 {
		raw = raw[len(raw)-8000:]
	}
	return string(raw)
}

// do sends one request with a JSON body (nil: none) and returns the status and the body.
func (s *server) do(ctx context.Context, method, target, host, token string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, raw, err
}

// operator POSTs to the operator API, expects 201 and returns the id of the member it names.
func (s *server) operator(t *testing.T, path string, body any, member string) string {
	t.Helper()
	status, raw, err := s.do(context.Background(), http.MethodPost, s.opURL+path, "", operatorToken, body)
	var res map[string]json.RawMessage
	var obj struct{ ID string }
	if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &res) != nil || json.Unmarshal(res[member], &obj) != nil || obj.ID == "" {
		t.Fatalf("POST %s: status %d, %v, %s", path, status, err, raw)
	}
	return obj.ID
}

// contactByEmail looks a contact up by email through the integration API.
func (s *server) contactByEmail(fx fixture, email string) (contactState, bool, error) {
	status, raw, err := s.do(context.Background(), http.MethodGet, s.apiURL+"/api/v1/contacts?email="+url.QueryEscape(strings.ToLower(email)), apiHost, fx.key, nil)
	if err != nil {
		return contactState{}, false, err
	}
	if status != http.StatusOK {
		return contactState{}, false, fmt.Errorf("GET by email: status %d: %s", status, raw)
	}
	var res struct {
		Contacts []contactView `json:"contacts"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return contactState{}, false, fmt.Errorf("GET by email: %v: %s", err, raw)
	}
	switch len(res.Contacts) {
	case 0:
		return contactState{}, false, nil
	case 1:
		c, err := res.Contacts[0].state(email)
		return c, err == nil, err
	default:
		return contactState{}, false, fmt.Errorf("%d contacts for one email: %s", len(res.Contacts), raw)
	}
}

// contactView is a contact as the integration API shows it.
type contactView struct {
	Email        string            `json:"email"`
	FirstName    string            `json:"firstName"`
	LastName     string            `json:"lastName"`
	TagIDs       []string          `json:"tagIds"`
	CustomFields map[string]string `json:"customFields"`
}

// state checks that the contact keeps the casing of the write that created it.
func (c contactView) state(createdAs string) (contactState, error) {
	if c.Email != createdAs {
		return contactState{}, fmt.Errorf("email %s is not the casing of the creating write %s", c.Email, createdAs)
	}
	return contactState{FirstName: c.FirstName, LastName: c.LastName, TagIDs: c.TagIDs, CustomFields: c.CustomFields}, nil
}

// decodeContact reads the contact of a write's answer.
func decodeContact(raw []byte, createdAs string) (contactState, error) {
	var res struct {
		Contact contactView `json:"contact"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return contactState{}, fmt.Errorf("%v: %s", err, raw)
	}
	return res.Contact.state(createdAs)
}
