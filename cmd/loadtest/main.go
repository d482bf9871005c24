// Command loadtest is the load script of `make bench`: it builds funnel, runs it as a separate
// process on a fresh database of each storage mode, and drives POST /api/v1/contacts over
// loopback. It reports upserts/s and latency percentiles for concurrent closed-loop clients,
// then the projection lag (from /metrics) at a fixed write rate. Every phase is bounded in time;
// it only ever talks to 127.0.0.1.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/funnelhq/funnel/infra/sealing"
)

func main() {
	modes := flag.String("db", "sqlite,postgres", "storage modes to measure")
	clients := flag.Int("clients", 8, "concurrent clients of the throughput phase")
	duration := flag.Duration("duration", 10*time.Second, "length of each phase")
	rate := flag.Int("rate", 1000, "writes per second of the lag phase")
	pgURL := flag.String("postgres", envOr("FUNNEL_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test"), "PostgreSQL server for the postgres mode")
	flag.Parse()

	dir, err := os.MkdirTemp("", "funnel-load-")
	check(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "funnel")
	build := exec.Command("go", "build", "-o", bin, "./cmd/funnel")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	check(build.Run())

	for _, mode := range strings.Split(*modes, ",") {
		dbURL, drop := database(mode, dir, *pgURL)
		fmt.Printf("== %s, %d clients, %s\n", mode, *clients, *duration)
		srv := startServer(bin, dbURL)
		key := setUp(srv)
		throughput(srv, key, *clients, *duration)
		lag(srv, key, *rate, *duration)
		srv.stop()
		drop()
	}
}

type server struct {
	api, admin string
	cmd        *exec.Cmd
}

const adminToken = "load-test-token"

func startServer(bin, dbURL string) *server {
	s := &server{api: freeAddr(), admin: freeAddr()}
	// A fresh server key: PostgreSQL needs one (SQLite would make its key file).
	secretKey, err := sealing.NewKey()
	check(err)
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = append(os.Environ(), "FUNNEL_ADDR="+s.api, "FUNNEL_ADMIN_ADDR="+s.admin, "FUNNEL_ADMIN_TOKEN="+adminToken,
		"FUNNEL_DATABASE_URL="+dbURL, "FUNNEL_RATE_LIMITS=off", "FUNNEL_LOG_LEVEL=warn", "FUNNEL_SECRET_KEY="+secretKey)
	s.cmd.Stderr = os.Stderr
	check(s.cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get("http://" + s.admin + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	check(errors.New("server did not become ready"))
	return nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
	}
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}

func call(method, url, host, token string, body any) (int, map[string]any) {
	var buf io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		buf = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, buf)
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

func setUp(s *server) string {
	admin := "http://" + s.admin + "/admin/v1"
	_, acc := call("POST", admin+"/accounts", "", adminToken, map[string]any{"name": "load"})
	id := acc["account"].(map[string]any)["id"].(string)
	for _, tag := range []string{"Lead", "Newsletter"} {
		call("POST", admin+"/accounts/"+id+"/tags", "", adminToken, map[string]any{"name": tag})
	}
	_, key := call("POST", admin+"/accounts/"+id+"/api-keys", "", adminToken, map[string]any{})
	return key["apiKey"].(map[string]any)["key"].(string)
}

var seq atomic.Int64

func upsert(s *server, key string) (time.Duration, bool) {
	body := map[string]any{"email": fmt.Sprintf("load-%d@example.com", seq.Add(1)), "firstName": "Load", "tagNames": []string{"Lead", "Newsletter"}}
	start := time.Now()
	status, _ := call("POST", "http://"+s.api+"/api/v1/contacts", "api.localhost", key, body)
	return time.Since(start), status == http.StatusOK
}

func throughput(s *server, key string, clients int, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var all []time.Duration
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				took, ok := upsert(s, key)
				if !ok {
					failed.Add(1)
					continue
				}
				mine = append(mine, took)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	fmt.Printf("upserts: %.0f/s over %s (%d ok, %d failed); latency p50 %s, p99 %s, max %s\n",
		float64(len(all))/elapsed.Seconds(), elapsed.Round(time.Millisecond), len(all), failed.Load(),
		pct(all, 0.50), pct(all, 0.99), pct(all, 1))
}

// lag writes at a fixed rate and reads the projection lag histogram of the contacts read model.
func lag(s *server, key string, rate int, d time.Duration) {
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
			if _, ok := upsert(s, key); !ok {
				failed.Add(1)
			}
			sent.Add(1)
		}()
	}
	wg.Wait()
	after := lagBuckets(s)
	fmt.Printf("projection lag at %d writes/s (%d sent, %d failed or dropped): p50 %s, p99 %s (contacts read model)\n",
		rate, sent.Load(), failed.Load(), quantile(before, after, 0.50), quantile(before, after, 0.99))
}

type bucket struct {
	le    float64
	count float64
}

func lagBuckets(s *server) []bucket {
	res, err := http.Get("http://" + s.admin + "/metrics")
	check(err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out []bucket
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, `funnel_projection_lag_seconds_bucket{`) || !strings.Contains(line, `projection="contacts"`) {
			continue
		}
		var b bucket
		le := line[strings.Index(line, `le="`)+4:]
		le = le[:strings.Index(le, `"`)]
		if le == "+Inf" {
			b.le = 1e9
		} else {
			fmt.Sscan(le, &b.le)
		}
		fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &b.count)
		out = append(out, b)
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

func database(mode, dir, pgURL string) (string, func()) {
	switch mode {
	case "sqlite":
		return "sqlite:" + filepath.Join(dir, "load.db"), func() {}
	case "postgres":
		admin, err := sql.Open("pgx", pgURL)
		check(err)
		name := fmt.Sprintf("funnel_load_%d", time.Now().UnixNano())
		_, err = admin.Exec("CREATE DATABASE " + name)
		check(err)
		u := pgURL[:strings.LastIndex(pgURL, "/")+1] + name
		return u, func() {
			_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			admin.Close()
		}
	}
	check(fmt.Errorf("unknown mode %q", mode))
	return "", nil
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().String()
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}
