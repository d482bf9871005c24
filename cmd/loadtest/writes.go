package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var seq atomic.Int64

func upsert(s *server, key string) (time.Duration, bool) {
	body := map[string]any{"email": fmt.Sprintf("load-%d@example.com", seq.Add(1)), "firstName": "Load", "tagNames": []string{"Lead", "Newsletter"}}
	start := time.Now()
	status, _ := call("POST", "http://"+s.api+"/api/v1/contacts", "api.localhost", key, body)
	return time.Since(start), status == http.StatusOK
}

// load is what a closed-loop phase measured.
type load struct {
	rate     float64 // successful requests per second
	p50, p99 time.Duration
	cpu      *cpuUse // the machine's CPU time per request, where /proc tells
}

// closedLoop runs clients goroutines that each call op on s back to back for d, and reports the
// rate of successful calls, their latency, and the machine's CPU time per call.
func closedLoop(s *server, clients int, d time.Duration, op func() (time.Duration, bool)) load {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var all []time.Duration
	var failed atomic.Int64
	var wg sync.WaitGroup
	cpuUsed := measureCPU(s.cmd.Process.Pid)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			var mine []time.Duration
			for ctx.Err() == nil {
				took, ok := op()
				if !ok {
					failed.Add(1)
					continue
				}
				mine = append(mine, took)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	fmt.Printf("  %.0f/s over %s (%d ok, %d failed); latency p50 %s, p99 %s, max %s\n",
		float64(len(all))/elapsed.Seconds(), elapsed.Round(time.Millisecond), len(all), failed.Load(),
		pct(all, 0.50), pct(all, 0.99), pct(all, 1))
	out := load{rate: float64(len(all)) / elapsed.Seconds(), p50: pct(all, 0.50), p99: pct(all, 0.99)}
	if use, ok := cpuUsed(len(all) + int(failed.Load())); ok {
		out.cpu = &use
		fmt.Printf("  %s\n", use)
	}
	return out
}

// throughput drives upserts (a new email, two tagNames) from closed-loop clients.
func throughput(s *server, key string, clients int, d time.Duration) load {
	fmt.Printf("upserts, %d clients:\n", clients)
	return closedLoop(s, clients, d, func() (time.Duration, bool) { return upsert(s, key) })
}

// lag submits a form at a fixed rate and reads the projection lag histograms: the contacts read
// model's (inline, committed with the write) and the relayed projections' that the submissions
// reach (form submissions, and webhooks through a subscription to form.submitted whose receiver
// is in this process), which are the relay's lag. An upsert would not do: no relayed projection
// handles its events. The subscription is deleted after the phase.
func lag(s *server, accountID, key string, rate int, d time.Duration) {
	receiver := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go func() { _ = receiver.Serve(ln) }()
	defer receiver.Close()
	admin := "http://" + s.admin + "/admin/v1/accounts/" + accountID
	status, made := call("POST", admin+"/forms", "", adminToken, map[string]any{"name": "Lag",
		"fields": []map[string]any{{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true}}})
	if status != http.StatusCreated {
		check(fmt.Errorf("create the lag phase's form: %d %v", status, made))
	}
	form := made["form"].(map[string]any)
	submissions := "http://" + s.api + "/api/v1/forms/" + form["id"].(string) + "/submissions"
	emailField := form["fields"].([]any)[0].(map[string]any)["id"].(string)
	status, made = call("POST", admin+"/webhooks", "", adminToken, map[string]any{"url": "http://" + ln.Addr().String() + "/hook", "events": []string{"form.submitted"}})
	if status != http.StatusCreated {
		check(fmt.Errorf("subscribe the lag phase's webhook: %d %v", status, made))
	}
	defer call("DELETE", admin+"/webhooks/"+made["webhook"].(map[string]any)["id"].(string), "", adminToken, nil)
	submit := func() bool {
		body := map[string]any{"values": map[string]any{emailField: fmt.Sprintf("load-%d@example.com", seq.Add(1))}}
		status, _ := call("POST", submissions, "api.localhost", key, body)
		return status == http.StatusCreated
	}
	before := lagBuckets(s)
	ticker := time.NewTicker(time.Second / time.Duration(rate))
	defer ticker.Stop()
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var sent, failed atomic.Int64
	sem := make(chan struct{}, 256)
	for time.Now().Before(deadline) {
		<-ticker.C
		select {
		case sem <- struct{}{}:
		default:
			failed.Add(1) // the server fell behind the rate by 256 requests
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if !submit() {
				failed.Add(1)
			}
			sent.Add(1)
		}()
	}
	wg.Wait()
	time.Sleep(time.Second) // the relayed projections apply the last writes
	after := lagBuckets(s)
	fmt.Printf("projection lag at %d form submissions/s (%d sent, %d failed or dropped): p50 %s, p99 %s (contacts read model)\n",
		rate, sent.Load(), failed.Load(), quantile(before["contacts"], after["contacts"], 0.50), quantile(before["contacts"], after["contacts"], 0.99))
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if name == "contacts" || quantile(before[name], after[name], 0.5) == "n/a" {
			continue
		}
		fmt.Printf("  projection %s: p50 %s, p99 %s\n", name, quantile(before[name], after[name], 0.50), quantile(before[name], after[name], 0.99))
	}
}

type bucket struct {
	le    float64
	count float64
}

// lagBuckets scrapes the projection lag histogram of every projection from the service's /metrics.
func lagBuckets(s *server) map[string][]bucket {
	res, err := http.Get("http://" + s.admin + "/metrics")
	check(err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := map[string][]bucket{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, `funnel_projection_lag_seconds_bucket{`) {
			continue
		}
		name := line[strings.Index(line, `projection="`)+len(`projection="`):]
		name = name[:strings.Index(name, `"`)]
		var b bucket
		le := line[strings.Index(line, `le="`)+4:]
		le = le[:strings.Index(le, `"`)]
		if le == "+Inf" {
			b.le = 1e9
		} else {
			fmt.Sscan(le, &b.le)
		}
		fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &b.count)
		out[name] = append(out[name], b)
	}
	return out
}

// quantile is Prometheus' histogram_quantile over the buckets filled between two scrapes.
func quantile(before, after []bucket, q float64) string {
	if len(after) == 0 {
		return "n/a"
	}
	counts := make([]float64, len(after))
	for i := range after {
		counts[i] = after[i].count
		if i < len(before) {
			counts[i] -= before[i].count
		}
	}
	total := counts[len(counts)-1]
	if total == 0 {
		return "n/a"
	}
	rank := q * total
	prevLe, prevCount := 0.0, 0.0
	for i, b := range after {
		if counts[i] >= rank {
			if b.le >= 1e9 {
				return fmt.Sprintf("> %s", time.Duration(prevLe*float64(time.Second)))
			}
			frac := (rank - prevCount) / max(counts[i]-prevCount, 1e-9)
			return time.Duration((prevLe + (b.le-prevLe)*frac) * float64(time.Second)).Round(100 * time.Microsecond).String()
		}
		prevLe, prevCount = b.le, counts[i]
	}
	return "n/a"
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))].Round(10 * time.Microsecond)
}
