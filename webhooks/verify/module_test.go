package verify_test

import (
	"strings"
	"testing"

	"github.com/funnelhq/funnel/client/moduletest"
)

// An integrator's own module can import the receiver helper: a throwaway module outside the
// tree requires this module, builds, and runs a receiver check against a signature the helper
// itself produced.
func TestAnotherModuleImportsTheReceiverHelper(t *testing.T) {
	out := moduletest.Run(t, "../..", `package main

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
	if strings.TrimSpace(out) != "verified" {
		t.Fatalf("the receiver printed %q, want verified", out)
	}
}
