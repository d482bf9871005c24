package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/funnelhq/funnel/infra/sealing"
)

type server struct {
	api, admin string
	secretKey  string // the server key, which a rebuild beside the service needs too
	cmd        *exec.Cmd
}

const adminToken = "load-test-token"

// startServer runs `funnel serve` with args (e.g. "--role", "api") on dbURL and waits until it is
// ready.
func startServer(bin, dbURL string, args ...string) *server {
	s := &server{api: freeAddr(), admin: freeAddr()}
	secretKey := runKey()
	s.secretKey = secretKey
	s.cmd = exec.Command(bin, append([]string{"serve"}, args...)...)
	s.cmd.Env = append(os.Environ(), "FUNNEL_ADDR="+s.api, "FUNNEL_ADMIN_ADDR="+s.admin, "FUNNEL_ADMIN_TOKEN="+adminToken,
		"FUNNEL_DATABASE_URL="+dbURL, "FUNNEL_RATE_LIMITS=off", "FUNNEL_LOG_LEVEL=warn", "FUNNEL_SECRET_KEY="+secretKey,
		"FUNNEL_WEBHOOK_ALLOW_PRIVATE=true") // the lag phase's webhook goes to a receiver on loopback
	s.cmd.Stderr = os.Stderr
	check(s.cmd.Start())
	started.Store(s, struct{}{})
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

// runKey is the server key of this run, fresh and the same for every process: PostgreSQL needs
// one (SQLite would make its key file), and processes sharing a database must share it.
var runKey = sync.OnceValue(func() string {
	key, err := sealing.NewKey()
	check(err)
	return key
})

// started holds the servers started and not yet stopped: check stops them before the script
// exits on an error, so that a failed phase leaves no service running (and loading the machine).
var started sync.Map

func (s *server) stop() {
	started.Delete(s)
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

// peakRSS is the most resident memory the server's process has had so far (VmHWM, in bytes), or 0
// where /proc cannot tell.
func (s *server) peakRSS() int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb)
			return kb << 10
		}
	}
	return 0
}

// waitRelayed waits until the service's relay has published the log through head
// (funnel_relay_position on /metrics): every relayed projection has then applied the seeded events,
// so that a phase after the seeding measures itself, not the service catching up beside it.
func (s *server) waitRelayed(head int64) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if relayPosition(s.admin) >= head {
			return
		}
		if time.Now().After(deadline) {
			check(fmt.Errorf("the relay is not at %d after 5 minutes", head))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// relayPosition reads funnel_relay_position from the service's /metrics (-1 when it cannot).
func relayPosition(admin string) int64 {
	res, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(body)) {
		if value, ok := strings.CutPrefix(line, "funnel_relay_position "); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
				return int64(f)
			}
		}
	}
	return -1
}

// setUp creates an account with the two tags the upserts name, and an API key of it; it returns
// the account's id and the key.
func setUp(s *server) (string, string) {
	admin := "http://" + s.admin + "/admin/v1"
	_, acc := call("POST", admin+"/accounts", "", adminToken, map[string]any{"name": "load"})
	id := acc["account"].(map[string]any)["id"].(string)
	for _, tag := range []string{"Lead", "Newsletter"} {
		call("POST", admin+"/accounts/"+id+"/tags", "", adminToken, map[string]any{"name": tag})
	}
	_, key := call("POST", admin+"/accounts/"+id+"/api-keys", "", adminToken, map[string]any{})
	return id, key["apiKey"].(map[string]any)["key"].(string)
}

// get reads a URL and throws the body away, returning the status (0 when the call failed).
func get(url, host, token string) int {
	req, _ := http.NewRequest("GET", url, nil)
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().String()
}
