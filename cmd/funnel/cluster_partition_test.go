//go:build unix

package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// TestAPartitionedWorkerStopsItsWorkBeforeAnotherTakesItOver: operator-api.md, "Several
// processes (PostgreSQL)": each projection runs on exactly one worker at a time;
// docs/deployment.md, "Takeover": a worker that could not renew its leases stops their work
// itself, 4 s after its last renewal and so before the leases expire (5 s) and another worker may
// take them.
//
// Two workers; one reaches PostgreSQL through a proxy that is then partitioned: what is sent on
// its connections goes nowhere and no answer comes, and new connections are accepted but never
// answered, as when the packets to the database are dropped. Its statements then hang rather
// than fail, so only deadlines on them and a watchdog that needs no database can stop its work in
// time. The test reads, from the two processes' logs (one clock: the same host), when the
// partitioned worker's work stopped ("cluster: runs" without those leases, logged once Hold
// returned) and when the other took each of its leases over: the stop must come first, by a
// margin. A SIGTERM then ends the partitioned worker within the 10 s a stop may take.
func TestAPartitionedWorkerStopsItsWorkBeforeAnotherTakesItOver(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := smallPools(t, sqldbtest.URL(t, sqldb.Postgres))
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startPGProxy(t, u.Host)
	viaProxy := *u
	viaProxy.Host = proxy.addr
	c := &clusterRun{t: t, bin: bin, dbURL: dbURL}
	// The same server key as c.start gives the others: it is derived from the database's URL.
	w1 := startServer(t, bin, viaProxy.String(), "FUNNEL_ROLE=worker", "FUNNEL_SECRET_KEY="+servicetest.SecretKey(dbURL))
	w2 := c.start("worker")
	a1 := c.start("api")
	c.apis = []*server{a1}
	c.waitSpread(w1, w2)
	before := leasesHeld(w1)
	if len(before) == 0 {
		t.Fatal("the worker behind the proxy holds no lease")
	}

	proxy.partition(true)
	defer proxy.partition(false)
	cut := time.Now()
	for !containsAll(leasesHeld(w2), before) {
		if time.Since(cut) > 15*time.Second {
			t.Fatalf("the other worker did not take %v over within 15 s", before)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if held := leasesHeld(w1); held == nil || slices.ContainsFunc(before, func(name string) bool { return slices.Contains(held, name) }) {
		t.Errorf("once the other worker took %v over, the partitioned one reports holding %v (nil: its metrics did not answer)", before, held)
	}

	stopped, ok := stoppedAt(t, w1, cut, before)
	if !ok {
		t.Fatalf("the partitioned worker logged no stop of %v after the partition\n%s", before, w1.logTail())
	}
	tookAt, ok := tookOverAt(t, w2, cut, before)
	if !ok {
		t.Fatalf("the other worker logged no takeover of %v", before)
	}
	t.Logf("partitioned: its work stopped %s after the cut, the other worker took the first lease over %s after it",
		stopped.Sub(cut).Round(time.Millisecond), tookAt.Sub(cut).Round(time.Millisecond))
	// The stop starts 4 s after the last renewal's start and the lease expires 5 s after it: the
	// log's millisecond clock leaves room for far less than that second.
	if margin := tookAt.Sub(stopped); margin < 200*time.Millisecond {
		t.Errorf("the partitioned worker stopped %v only %s before the other took one over, want it stopped first by a margin", before, margin)
	}

	// SIGTERM while still cut off: the process exits 0 within the 10 s operator-api.md allows,
	// with a margin: its deletions of its rows give up soon (the rows expire anyway).
	termAt := time.Now()
	w1.stop(t)
	if took := time.Since(termAt); took > 7*time.Second {
		t.Errorf("the partitioned worker exited %s after SIGTERM, want well within 10 s", took.Round(time.Millisecond))
	} else {
		t.Logf("the partitioned worker exited %s after SIGTERM", took.Round(time.Millisecond))
	}
}

func containsAll(have, want []string) bool {
	return !slices.ContainsFunc(want, func(name string) bool { return !slices.Contains(have, name) })
}

// logLine is a line of a process's log (zap's JSON).
type logLine struct {
	TS     string   `json:"ts"`
	Msg    string   `json:"msg"`
	Lease  string   `json:"lease"`
	Leases []string `json:"leases"`
}

// loggedLine is a log line and when it was logged.
type loggedLine struct {
	at time.Time
	logLine
}

// logLines returns the lines of a process's log logged at or after since.
func logLines(t *testing.T, s *server, since time.Time) []loggedLine {
	t.Helper()
	f, err := os.Open(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []loggedLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05.000Z0700", l.TS)
		if err != nil || at.Before(since.Truncate(time.Millisecond)) {
			continue
		}
		out = append(out, loggedLine{at, l})
	}
	return out
}

// stoppedAt is when a worker first told what runs without any of the leases.
func stoppedAt(t *testing.T, s *server, since time.Time, leases []string) (time.Time, bool) {
	for _, l := range logLines(t, s, since) {
		if l.Msg == "cluster: runs" && !slices.ContainsFunc(leases, func(name string) bool { return slices.Contains(l.Leases, name) }) {
			return l.at, true
		}
	}
	return time.Time{}, false
}

// tookOverAt is when a worker first took one of the leases over.
func tookOverAt(t *testing.T, s *server, since time.Time, leases []string) (time.Time, bool) {
	for _, l := range logLines(t, s, since) {
		if l.Msg == "cluster: took a lease over" && slices.Contains(leases, l.Lease) {
			return l.at, true
		}
	}
	return time.Time{}, false
}

// leasesHeld reads what a process runs from its metrics (funnel_cluster_lease_held{lease} 1);
// nil when they do not answer.
func leasesHeld(s *server) []string {
	// 5 s: a scrape counts the webhook backlog in the database, for at most 2 s.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	status, raw, err := s.do(ctx, http.MethodGet, s.opURL+"/metrics", "", "", nil)
	if err != nil || status != http.StatusOK {
		return nil
	}
	out := []string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, `funnel_cluster_lease_held{lease="`) && strings.HasSuffix(line, " 1") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(line, `funnel_cluster_lease_held{lease="`), `"} 1`))
		}
	}
	return out
}

// pgProxy forwards TCP connections to PostgreSQL. Partitioned, it forwards nothing and answers
// nothing: what either side sends is dropped, and new connections are accepted and left
// unanswered. Healed, it closes every connection it held (their streams lost bytes) and forwards
// again.
type pgProxy struct {
	addr        string
	mu          sync.Mutex
	partitioned bool
	conns       map[net.Conn]bool
}

func startPGProxy(t *testing.T, target string) *pgProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{addr: l.Addr().String(), conns: map[net.Conn]bool{}}
	t.Cleanup(func() {
		l.Close()
		p.closeAll()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns[c] = true
			partitioned := p.partitioned
			p.mu.Unlock()
			if partitioned {
				go func() { _, _ = io.Copy(io.Discard, c) }() // accepted, never answered
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[up] = true
			p.mu.Unlock()
			go p.forward(up, c)
			go p.forward(c, up)
		}
	}()
	return p
}

// forward copies from src to dst, dropping what comes while partitioned.
func (p *pgProxy) forward(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			partitioned := p.partitioned
			p.mu.Unlock()
			if !partitioned {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *pgProxy) partition(on bool) {
	p.mu.Lock()
	was := p.partitioned
	p.partitioned = on
	p.mu.Unlock()
	if was && !on {
		p.closeAll()
	}
}

func (p *pgProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}
