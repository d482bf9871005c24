//go:build unix

package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// TestAnAPIProcessIsReadyOnlyWhileWorkersRunTheProjections: docs/deployment.md, "Health and
// readiness": an API process started while no worker runs stays unready, since its writes would
// wait for read models nobody applies (and answer 503 after 10 s); an orchestrator routes traffic
// to it only once it is ready. It checks, with the binary:
//
//   - an API process alone on the database answers /readyz 503 waiting_for_workers, on both
//     listeners, with a reason naming a projection nobody runs, and keeps answering so;
//   - it is ready once a worker runs, and a write through it that waits for a relayed read model
//     (a new account) is answered 201;
//   - it stays ready while one of two workers is killed and the other takes its work over: the
//     leases of a dead worker stay unexpired for 5 s, and the takeover's gap after that is
//     shorter than the 5 s without a holder that make the process unready;
//   - once the last worker stops, it turns unready again, within those 5 s and a heartbeat.
//
// Workers and `all` processes are ready without any other process: every other test starts them
// alone (startServer waits for /readyz).
func TestAnAPIProcessIsReadyOnlyWhileWorkersRunTheProjections(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	dbURL := smallPools(t, sqldbtest.URL(t, sqldb.Postgres))
	c := &clusterRun{t: t, bin: bin, dbURL: dbURL}

	api := launch(t, bin, dbURL, "FUNNEL_ROLE=api")
	var unready health
	for deadline := time.Now().Add(20 * time.Second); unready.Status != "waiting_for_workers"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("an API process with no worker answers /readyz %d %+v, want 503 waiting_for_workers\n%s", unready.code, unready, api.logTail())
		}
		unready = readiness(api, api.opURL)
	}
	// It stays so, on both listeners, for longer than a few heartbeats.
	for until := time.Now().Add(2 * time.Second); time.Now().Before(until); time.Sleep(200 * time.Millisecond) {
		for _, base := range []string{api.opURL, api.apiURL} {
			if h := readiness(api, base); h.code != http.StatusServiceUnavailable || h.Status != "waiting_for_workers" || !strings.Contains(h.Reason, "tags") {
				t.Fatalf("%s/readyz with no worker: %d %+v, want 503 waiting_for_workers naming the projections", base, h.code, h)
			}
		}
	}
	t.Logf("with no worker: 503 %s", unready.Reason)

	w1 := c.start("worker")
	if err := api.waitReady(10 * time.Second); err != nil {
		t.Fatalf("the API process once a worker runs: %v", err)
	}
	api.operator(t, "/admin/v1/accounts", map[string]any{"name": "Served"}, "account")

	w2 := c.start("worker")
	c.apis = []*server{api}
	c.waitSpread(w1, w2)
	all := append(leasesHeld(w1), leasesHeld(w2)...)
	watch := watchReadiness(api)
	w1.kill(t)
	killed := time.Now()
	// The survivor runs everything again (the dead one's leases expire 5 s after its last
	// renewal, and are taken within 2.5 s), and a little past that.
	for !slices.Equal(slices.Sorted(slices.Values(leasesHeld(w2))), slices.Sorted(slices.Values(all))) {
		if time.Since(killed) > 15*time.Second {
			t.Fatalf("the surviving worker runs %v 15 s after the other was killed, want %v", leasesHeld(w2), all)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if bad := watch.stop(); len(bad) > 0 {
		t.Errorf("the API process turned unready while a worker was killed and the other took its work over (%s): %v", time.Since(killed).Round(100*time.Millisecond), bad)
	}
	api.operator(t, "/admin/v1/accounts", map[string]any{"name": "After a takeover"}, "account")

	w2.stop(t)
	stopped := time.Now()
	for {
		h := readiness(api, api.opURL)
		if h.code == http.StatusServiceUnavailable && h.Status == "waiting_for_workers" {
			t.Logf("unready %s after the last worker stopped", time.Since(stopped).Round(100*time.Millisecond))
			break
		}
		if time.Since(stopped) > 9*time.Second {
			t.Fatalf("9 s after the last worker stopped, the API process answers /readyz %d %+v", h.code, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
	api.stop(t)
}

type health struct {
	code   int
	Status string
	Reason string
}

func readiness(s *server, base string) health {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	status, raw, err := s.do(ctx, http.MethodGet, base+"/readyz", apiHost, "", nil)
	h := health{code: status}
	if err != nil || json.Unmarshal(raw, &h) != nil {
		h.Status = "no answer"
	}
	return h
}

// readinessWatch polls a process's /readyz until stopped, and keeps every answer that was not
// 200.
type readinessWatch struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	bad  []health
}

func watchReadiness(s *server) *readinessWatch {
	w := &readinessWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if h := readiness(s, s.opURL); h.code != http.StatusOK {
				w.mu.Lock()
				w.bad = append(w.bad, h)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *readinessWatch) stop() []health {
	close(w.done)
	w.wg.Wait()
	return w.bad
}
