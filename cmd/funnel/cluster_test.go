//go:build unix

package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// TestClusterDividesTheWork is the test of issue 23 against the real binary: two API processes
// and two workers share one PostgreSQL database while writers write through both API processes
// (contacts and form submissions, whose webhooks a receiver takes). It checks, in turn:
//
//   - steady state: the leases spread the projections and loops over both workers, each on one
//     of them, and each batch is applied once in the whole cluster (no projection finds a batch
//     applied by another process, and each projection's batches are counted on one worker only);
//   - kill -9 of the worker that runs the tags projection (what contacts' answers read), then of
//     the one that runs the webhook projector, then a worker that hangs (SIGSTOP): the other
//     worker takes each over, measured, within 10 s;
//   - a rolling restart of all four processes, one at a time (SIGTERM, exit 0, a new one), with
//     the load going on: no 5xx at all;
//   - at the end, every acknowledged write reads back the same through both API processes, every
//     acknowledged submission's webhook arrived, each under one delivery id, and no batch was
//     applied twice.
//
// SQLite is one process by design (FUNNEL_ROLE api or worker is refused there: TestRolesNeedPostgres).
func TestClusterDividesTheWork(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := smallPools(t, sqldbtest.URL(t, sqldb.Postgres))
	receiverAddr := freeAddr(t)
	rcv := listenOn(t, receiverAddr)
	env := []string{"FUNNEL_WEBHOOK_ALLOW_PRIVATE=true", "FUNNEL_WEBHOOK_BACKOFF_BASE=100ms", "FUNNEL_WEBHOOK_BACKOFF_CAP=1s"}
	c := &clusterRun{t: t, bin: bin, dbURL: dbURL, env: env}

	w1 := c.start("worker")
	w2 := c.start("worker")
	a1 := c.start("api")
	a2 := c.start("api")
	c.apis = []*server{a1, a2}
	c.waitSpread(w1, w2)

	fx := setUpAccount(t, a1)
	formID, emailField := newSignupForm(t, a1, fx.accountID)
	status, raw, err := a1.do(context.Background(), http.MethodPost, a1.opURL+"/admin/v1/accounts/"+fx.accountID+"/webhooks", "", operatorToken,
		map[string]any{"url": "http://" + receiverAddr + "/hooks", "events": []string{"form.submitted"}})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("subscribe: %d %v %s", status, err, raw)
	}

	load := c.startLoad(fx, formID, emailField, 6)

	// Steady state: each batch applied once in the cluster, once the load has had writes of
	// both kinds acknowledged (their answers wait for the read models: batches were applied).
	load.waitAcknowledged(t, 30, 10)
	c.checkAppliedOnce([]*server{w1, w2})

	// kill -9 of the worker running the tags projection, then of the one running the webhook
	// projector; a new worker replaces each.
	// Then a worker hangs (SIGSTOP), holding the accounts projection: it loses it all the same,
	// and once it wakes (SIGCONT) it finds its leases gone and runs nothing twice; it is then
	// stopped and replaced.
	workers := []*server{w1, w2}
	for _, phase := range []struct{ lease, how string }{{"tags", "kill -9"}, {"webhooks", "kill -9"}, {"accounts", "SIGSTOP"}} {
		lease := phase.lease
		victim := c.holderOf(lease, workers)
		victimID := c.processID(victim)
		if phase.how == "kill -9" {
			victim.kill(t)
		} else if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		took := c.waitTakenOver(lease, victimID, killed)
		t.Logf("%s of the worker running %s: taken over after %s", phase.how, lease, took.Round(time.Millisecond))
		if took > 10*time.Second {
			t.Errorf("%s taken over after %s, want within 10s", lease, took)
		}
		if phase.how == "SIGSTOP" {
			if err := victim.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			c.waitSpread(workers...) // awake again: each lease on one worker, the woken one's share
			victim.stop(t)
		}
		fresh := c.start("worker")
		workers = append(slices.DeleteFunc(workers, func(s *server) bool { return s == victim }), fresh)
		c.waitSpread(workers...)
	}

	// Rolling restart of all four under load: not one 5xx.
	fiveBefore := load.fiveXX.Load()
	for i := range c.apis {
		old := c.apis[i]
		c.setAPIs(slices.DeleteFunc(slices.Clone(c.apis), func(s *server) bool { return s == old })) // out of the balancer first
		old.stop(t)
		c.setAPIs(append(c.apis, c.start("api")))
	}
	for i, old := range workers {
		old.stop(t)
		workers[i] = c.start("worker")
		c.waitSpread(workers...)
	}
	// The load goes on through the new processes for a while (writes acknowledged, not a fixed
	// time), then stops.
	load.waitAcknowledged(t, int(load.contactWrites.Load())+30, load.submissionCount()+10)
	load.stop()
	if n := load.fiveXX.Load() - fiveBefore; n > 0 {
		t.Errorf("%d answers were 5xx during the rolling restart", n)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d contact writes and %d form submissions acknowledged", load.contactWrites.Load(), len(load.submissions))

	// Every acknowledged write, read through each API process.
	for _, api := range c.apis {
		for key, writes := range load.acked {
			got, found, err := api.contactByEmail(fx, key)
			if err != nil || !found || !equalState(got, fx.fold(writes)) {
				t.Errorf("%s through %s: %+v (found %v, %v), want %+v", key, api.apiURL, got, found, err, fx.fold(writes))
			}
		}
	}
	rcv.waitForAll(t, load.submissions, 30*time.Second)
	bySubmission := map[string]map[string]bool{}
	for id, attempts := range rcv.byDelivery() {
		for _, a := range attempts {
			var env struct {
				Data struct{ SubmissionID string } `json:"data"`
			}
			_ = json.Unmarshal(a.body, &env)
			if bySubmission[env.Data.SubmissionID] == nil {
				bySubmission[env.Data.SubmissionID] = map[string]bool{}
			}
			bySubmission[env.Data.SubmissionID][id] = true
		}
	}
	for sub, ids := range bySubmission {
		if len(ids) != 1 {
			t.Errorf("submission %s arrived under %d delivery ids", sub, len(ids))
		}
	}
	c.checkAppliedOnce(append(slices.Clone(workers), c.apis...))
	for _, s := range append(workers, c.apis...) {
		s.stop(t)
	}
}

// TestRolesNeedPostgres: a SQLite file is served by one process, which runs everything.
func TestRolesNeedPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	for _, role := range []string{"api", "worker", "neither"} {
		_, stderr, code := run(t, bin, sqldbtest.URL(t, sqldb.SQLite), "serve", "--role", role)
		if code == 0 || !strings.Contains(stderr, "FUNNEL_ROLE") {
			t.Errorf("serve --role %s on SQLite: exit %d, %s", role, code, stderr)
		}
	}
}

// smallPools caps each pool of every process at 4 connections: four processes on one database,
// beside the other packages' tests on the same server.
func smallPools(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(sqldb.PoolCapParam, "4")
	u.RawQuery = q.Encode()
	return u.String()
}

type clusterRun struct {
	t     *testing.T
	bin   string
	dbURL string
	env   []string

	mu   sync.Mutex
	apis []*server // in the load balancer's rotation
}

func (c *clusterRun) start(role string) *server {
	c.t.Helper()
	return startServer(c.t, c.bin, c.dbURL, append(slices.Clone(c.env), "FUNNEL_ROLE="+role)...)
}

func (c *clusterRun) setAPIs(apis []*server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apis = apis
}

func (c *clusterRun) api(i int) *server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apis[i%len(c.apis)]
}

type processView struct {
	ID   string
	Role string
	PID  int
	Runs []string
}

// view reads GET /admin/v1/cluster through an API process.
func (c *clusterRun) view() []processView {
	c.t.Helper()
	api := c.api(0)
	status, raw, err := api.do(context.Background(), http.MethodGet, api.opURL+"/admin/v1/cluster", "", operatorToken, nil)
	var res struct{ Processes []processView }
	if err != nil || status != http.StatusOK || json.Unmarshal(raw, &res) != nil {
		c.t.Fatalf("GET /admin/v1/cluster: %d %v %s", status, err, raw)
	}
	return res.Processes
}

func (c *clusterRun) processID(s *server) string {
	for _, p := range c.view() {
		if p.PID == s.cmd.Process.Pid {
			return p.ID
		}
	}
	c.t.Fatalf("process %d is not in the cluster view", s.cmd.Process.Pid)
	return ""
}

// waitSpread waits until the workers run every lease between them, each once, every worker
// some (and the API processes none), and the cluster view lists exactly those workers.
func (c *clusterRun) waitSpread(workers ...*server) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		problem := c.spreadProblem(workers)
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the work is not spread over the workers: %s", problem)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *clusterRun) spreadProblem(workers []*server) string {
	if len(c.apis) == 0 {
		return "no API process yet" // the view is read through one; checked again later
	}
	pids := map[int]bool{}
	for _, w := range workers {
		pids[w.cmd.Process.Pid] = true
	}
	seen := map[string]int{}
	for _, p := range c.view() {
		if p.Role == "api" {
			if len(p.Runs) > 0 {
				return fmt.Sprintf("api process %d runs %v", p.PID, p.Runs)
			}
			continue
		}
		if !pids[p.PID] {
			return fmt.Sprintf("process %d is still listed", p.PID)
		}
		if len(p.Runs) <= 1 { // the dispatcher alone
			return fmt.Sprintf("worker %d runs only %v", p.PID, p.Runs)
		}
		for _, name := range p.Runs {
			seen[name]++
		}
		delete(pids, p.PID)
	}
	if len(pids) > 0 {
		return "a worker is not listed yet"
	}
	for _, name := range []string{"tags", "accounts", "webhooks", "timers", "subscription-timers"} {
		if seen[name] != 1 {
			return fmt.Sprintf("%s runs on %d workers", name, seen[name])
		}
	}
	for name, n := range seen {
		if name != "dispatcher" && n != 1 {
			return fmt.Sprintf("%s runs on %d workers", name, n)
		}
	}
	return ""
}

func (c *clusterRun) holderOf(lease string, workers []*server) *server {
	c.t.Helper()
	for _, p := range c.view() {
		if slices.Contains(p.Runs, lease) {
			for _, w := range workers {
				if w.cmd.Process.Pid == p.PID {
					return w
				}
			}
		}
	}
	c.t.Fatalf("no worker runs %s", lease)
	return nil
}

// waitTakenOver returns how long after the kill another process ran the lease.
func (c *clusterRun) waitTakenOver(lease, victimID string, killed time.Time) time.Duration {
	c.t.Helper()
	for time.Since(killed) < 30*time.Second {
		for _, p := range c.view() {
			if p.ID != victimID && slices.Contains(p.Runs, lease) {
				return time.Since(killed)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("%s not taken over within 30s", lease)
	return 0
}

// checkAppliedOnce reads the processes' metrics: no projection found a batch already applied by
// another process, and each relayed projection's batches were applied by one process only (the
// inline ones, contacts and leads, are applied by every appending process in its appends).
func (c *clusterRun) checkAppliedOnce(processes []*server) {
	c.t.Helper()
	leased := map[string]bool{}
	for _, p := range c.view() {
		for _, name := range p.Runs {
			leased[fmt.Sprintf("funnel_projection_batches_total{projection=%q}", name)] = true
		}
	}
	appliers := map[string][]int{}
	for _, s := range processes {
		status, raw, err := s.do(context.Background(), http.MethodGet, s.opURL+"/metrics", "", "", nil)
		if err != nil || status != http.StatusOK {
			c.t.Fatalf("metrics: %d %v", status, err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			line := sc.Text()
			name, value, ok := metricLine(line)
			if !ok || value == 0 {
				continue
			}
			switch {
			case strings.HasPrefix(name, "funnel_projection_applied_elsewhere_total"):
				c.t.Errorf("process %d: %s %v: a batch applied twice in the cluster", s.cmd.Process.Pid, name, value)
			case leased[name]:
				appliers[name] = append(appliers[name], s.cmd.Process.Pid)
			}
		}
	}
	if len(appliers) == 0 {
		c.t.Errorf("no process applied any batch")
	}
	for name, pids := range appliers {
		if len(pids) > 1 && len(processes) == 2 {
			c.t.Errorf("%s counted on processes %v: one should run it", name, pids)
		}
	}
}

func metricLine(line string) (string, float64, bool) {
	if strings.HasPrefix(line, "#") {
		return "", 0, false
	}
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(line[i+1:], 64)
	return line[:i], v, err == nil
}

// clusterLoad is the writers: contact upserts and form submissions, sent round-robin to the API
// processes in rotation. A write that fails in transport (its process stopped or died under it)
// is sent again, the same, to another: upserts are idempotent, a submission sent twice is two
// submissions. A write counts once acknowledged.
type clusterLoad struct {
	cancel        context.CancelFunc
	wg            sync.WaitGroup
	fiveXX        atomic.Int64
	contactWrites atomic.Int64

	mu          sync.Mutex
	acked       map[string][]contactWrite
	submissions map[string]bool
}

// waitAcknowledged waits until the load has had at least contacts contact writes and
// submissions form submissions acknowledged in all.
func (l *clusterLoad) waitAcknowledged(t *testing.T, contacts, submissions int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if int(l.contactWrites.Load()) >= contacts && l.submissionCount() >= submissions {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load had %d contact writes and %d submissions acknowledged, want %d and %d", l.contactWrites.Load(), l.submissionCount(), contacts, submissions)
		}
	}
}

func (l *clusterLoad) submissionCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.submissions)
}

func (c *clusterRun) startLoad(fx fixture, formID, emailField string, writers int) *clusterLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &clusterLoad{cancel: cancel, acked: map[string][]contactWrite{}, submissions: map[string]bool{}}
	for i := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			w := &writer{acked: map[string][]contactWrite{}}
			for op := 0; ctx.Err() == nil; op++ {
				if op%3 == 2 {
					var res struct{ Submission struct{ ID string } }
					body := map[string]any{"values": map[string]any{emailField: fmt.Sprintf("cluster%d-%d@example.com", i, op)}}
					raw, ok := c.send(l, i+op, "/api/v1/forms/"+formID+"/submissions", fx.key, body, http.StatusCreated)
					if ok && json.Unmarshal(raw, &res) == nil {
						l.mu.Lock()
						l.submissions[res.Submission.ID] = true
						l.mu.Unlock()
					}
					continue
				}
				key, write := nextWrite(rng, i, op, w)
				if _, ok := c.send(l, i+op, "/api/v1/contacts", fx.key, write.body(fx), http.StatusOK); ok {
					if _, known := w.acked[key]; !known {
						w.emails = append(w.emails, key)
					}
					w.acked[key] = append(w.acked[key], write)
					l.contactWrites.Add(1)
					l.mu.Lock()
					l.acked[key] = slices.Clone(w.acked[key])
					l.mu.Unlock()
				} else {
					return
				}
			}
		}()
	}
	return l
}

// send posts until an answer comes (another API process after a transport error, or after a 5xx,
// which is counted), and tells whether it was the wanted status. A write that was never answered
// is retried for at most 30 s, also after the load stopped: every write sent is settled.
func (c *clusterRun) send(l *clusterLoad, turn int, path, key string, body any, want int) ([]byte, bool) {
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		api := c.api(turn + attempt)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		status, raw, err := api.do(ctx, http.MethodPost, api.apiURL+path, apiHost, key, body)
		cancel()
		switch {
		case err != nil:
			if !errors.Is(err, context.DeadlineExceeded) {
				time.Sleep(20 * time.Millisecond)
			}
			continue
		case status >= 500:
			l.fiveXX.Add(1)
			c.t.Logf("POST %s through %s: %d %s", path, api.apiURL, status, raw)
			time.Sleep(50 * time.Millisecond)
			continue
		case status != want:
			c.t.Errorf("POST %s: %d %s", path, status, raw)
			return raw, false
		}
		return raw, true
	}
	c.t.Errorf("POST %s: no answer within 30s", path)
	return nil, false
}

func (l *clusterLoad) stop() {
	l.cancel()
	l.wg.Wait()
}
