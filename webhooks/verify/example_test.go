package verify_test

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/funnelhq/funnel/webhooks/verify"
)

// A receiver reads the raw body first, verifies it, and only then decodes the JSON.
func Example() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the subscription's secret
	http.HandleFunc("/webhooks/funnel", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := verify.Standard(secret, r.Header, body, 5*time.Minute, time.Now()); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Or, for receivers that only know the body signature:
		// verify.Service(secret, body, r.Header.Get("X-Service-Signature"))
		w.WriteHeader(http.StatusNoContent) // any 2xx within 10 s acknowledges the delivery
	})

	body := []byte(`{"id":"evt_1","type":"form.submitted","createdAt":"2026-11-23T10:00:00.000Z","data":{}}`)
	fmt.Println(verify.Service("topsecret-0123456789", body, verify.ServiceSignature("topsecret-0123456789", body)) == nil)
	// Output: true
}
