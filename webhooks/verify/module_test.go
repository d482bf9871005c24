package verify_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// An integrator's own module can import the receiver helper: a throwaway module outside the
// tree requires this module (replaced by the checkout, as a fork or a vendored copy would be),
// builds, and runs a receiver check against a signature the helper itself produced.
func TestAnotherModuleImportsTheReceiverHelper(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a separate module")
	}
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", `module example.com/receiver

go 1.26

require github.com/funnelhq/funnel v0.0.0

replace github.com/funnelhq/funnel => `+checkout+`
`)
	write("main.go", `package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/funnelhq/funnel/webhooks/verify"
)

func main() {
	secret, body, now := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", []byte(`+"`"+`{"id":"e1"}`+"`"+`), time.Now()
	h := http.Header{}
	h.Set("webhook-id", "dlv_1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", verify.StandardSignature(secret, "dlv_1", now.Unix(), body))
	if err := verify.Standard(secret, h, body, 5*time.Minute, now); err != nil {
		fmt.Println("standard:", err)
		os.Exit(1)
	}
	if err := verify.Service(secret, body, verify.ServiceSignature(secret, body)); err != nil {
		fmt.Println("service:", err)
		os.Exit(1)
	}
	if verify.Service(secret, []byte("tampered"), verify.ServiceSignature(secret, body)) == nil {
		fmt.Println("a tampered body verified")
		os.Exit(1)
	}
	fmt.Println("verified")
}
`)
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	run := func(args ...string) string {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		// Only the module cache this checkout already fills: the test must not need the network.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	if out := run("run", "."); strings.TrimSpace(out) != "verified" {
		t.Fatalf("the receiver printed %q, want verified", out)
	}
}
