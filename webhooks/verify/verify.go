// Package verify checks that a webhook request really comes from funnel. Import it in the
// service that receives the webhooks.
//
// Every delivery carries two signatures:
//
//   - X-Service-Signature: lowercase hex HMAC-SHA256 of the raw body, keyed with the
//     subscription's secret (integration-api.md section 5). Use Service.
//   - webhook-id, webhook-timestamp, webhook-signature: the Standard Webhooks scheme, whose
//     signature also covers the delivery id and the time, so that a replayed request can be
//     refused. Use Standard, with a tolerance of a few minutes.
//
// While a secret is being rotated, webhook-signature carries one signature per valid secret,
// separated by spaces, and a request is genuine when any of them matches: a receiver can keep
// the previous secret until it switches. X-Service-Signature is always made with the current
// secret (Service accepts a space-separated list too, but funnel sends one).
package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrSignature is returned when no signature of the request matches the secret.
var ErrSignature = errors.New("verify: signature does not match")

// ErrTimestamp is returned when webhook-timestamp is missing or outside the tolerance.
var ErrTimestamp = errors.New("verify: timestamp missing or outside the tolerance")

// secretPrefix marks secrets in the Standard Webhooks form, whose key is the base64 part.
const secretPrefix = "whsec_"

// ServiceSignature computes the X-Service-Signature of a body.
func ServiceSignature(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// StandardSignature computes one webhook-signature entry ("v1,<base64>") for a message id,
// a unix timestamp and a body.
func StandardSignature(secret, msgID string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, standardKey(secret))
	mac.Write([]byte(msgID + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// standardKey is the HMAC key of a secret: the decoded bytes of a "whsec_" secret, the secret's
// own bytes otherwise.
func standardKey(secret string) []byte {
	if rest, ok := strings.CutPrefix(secret, secretPrefix); ok {
		if key, err := base64.StdEncoding.DecodeString(rest); err == nil {
			return key
		}
	}
	return []byte(secret)
}

// Service checks the X-Service-Signature header value of a raw body, in constant time.
func Service(secret string, body []byte, header string) error {
	want := []byte(ServiceSignature(secret, body))
	for _, got := range strings.Fields(header) {
		if hmac.Equal([]byte(got), want) {
			return nil
		}
	}
	return ErrSignature
}

// Standard checks the Standard Webhooks headers of a request with a raw body: the signature, in
// constant time, and that webhook-timestamp is within tolerance of now.
func Standard(secret string, header http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	ts, err := strconv.ParseInt(header.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if math.Abs(float64(now.Unix()-ts)) > tolerance.Seconds() {
		return ErrTimestamp
	}
	want := []byte(StandardSignature(secret, header.Get("webhook-id"), ts, body))
	for _, got := range strings.Fields(header.Get("webhook-signature")) {
		if hmac.Equal([]byte(got), want) {
			return nil
		}
	}
	return ErrSignature
}
