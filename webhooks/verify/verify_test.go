package verify

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestService(t *testing.T) {
	body := []byte(`{"a":1}`)
	sig := ServiceSignature("s3cret-s3cret-s3cret", body)
	if len(sig) != 64 || sig != lower(sig) {
		t.Fatalf("signature %q is not lowercase hex SHA-256", sig)
	}
	if err := Service("s3cret-s3cret-s3cret", body, sig); err != nil {
		t.Fatal(err)
	}
	if err := Service("s3cret-s3cret-s3cret", []byte(`{"a":2}`), sig); err != ErrSignature {
		t.Fatalf("tampered body: %v", err)
	}
	if err := Service("other-secret-other", body, sig); err != ErrSignature {
		t.Fatalf("wrong secret: %v", err)
	}
	if err := Service("s3cret-s3cret-s3cret", body, "deadbeef "+sig); err != nil {
		t.Fatalf("one of two signatures (rotation): %v", err)
	}
	if err := Service("s3cret-s3cret-s3cret", body, ""); err != ErrSignature {
		t.Fatalf("missing header: %v", err)
	}
}

func TestStandard(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"type":"form.submitted"}`)
	now := time.Unix(1_790_000_000, 0)
	h := http.Header{}
	h.Set("webhook-id", "dlv_1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", StandardSignature(secret, "dlv_1", now.Unix(), body))
	if err := Standard(secret, h, body, 5*time.Minute, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := Standard(secret, h, body, 5*time.Minute, now.Add(6*time.Minute)); err != ErrTimestamp {
		t.Fatalf("replayed after the tolerance: %v", err)
	}
	h.Set("webhook-id", "dlv_2")
	if err := Standard(secret, h, body, 5*time.Minute, now); err != ErrSignature {
		t.Fatalf("signature moved to another message: %v", err)
	}
	// The Standard Webhooks reference vector: key "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	// id msg_p5jXN8AQM9LWM0D4loKWxJek, timestamp 1614265330.
	got := StandardSignature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("reference vector: %s", got)
	}
}

func lower(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c + 32
		}
	}
	return string(out)
}
