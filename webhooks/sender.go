package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/funnelhq/funnel/webhooks/verify"
)

// newClient is the HTTP client of deliveries: it dials only addresses the target policy allows,
// through no proxy, and follows no redirect.
func newClient(cfg Config) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: cfg.Policy.dialControl}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, out of reach of the address check
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   max(cfg.Concurrency, 2),
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		// The receiver is the integrator's to choose: Go's default of 10 MiB of answer headers,
		// times the deliveries in flight, would let one receiver take the service's memory.
		MaxResponseHeaderBytes: maxAnswerHeaderBytes,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		// A redirect is an answer like any other: a failure, retried later (decisions.md).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// maxAnswerHeaderBytes bounds the headers of a receiver's answer; a larger answer is a failed
// attempt, retried like any other (docs/webhooks.md).
const maxAnswerHeaderBytes = 64 << 10

// outcome is what one attempt (or a decision not to make it) came to.
type outcome struct {
	delivery   claimed
	at         time.Time
	status     int
	err        string
	took       time.Duration
	header     http.Header
	skipReason string // not sent: the subscription ended meanwhile, or the body could not be opened
	notOpened  bool   // not sent: the body could not be opened (skipReason says why)
	unsent     bool   // not sent: too little of the claim was left, or its row is gone; the claim is handed back
}

// leaseMargin separates the end of an attempt from the end of its claim, so that the attempt is
// recorded while the claim still holds and no other dispatcher can be sending it meanwhile.
const leaseMargin = 2 * time.Second

// send makes one attempt.
func (d *Dispatcher) send(c claimed) outcome {
	now := time.Now()
	// The attempt's time is on the schedule's clock (Config.Now); the HTTP deadline, the
	// claim's end and the signature's timestamp on the real one.
	out := outcome{delivery: c, at: d.cfg.Now()}
	if c.subscriptionStatus != "active" {
		out.skipReason = "given up: subscription " + c.subscriptionStatus
		return out
	}
	if c.notOpened != "" {
		out.skipReason, out.notOpened = c.notOpened, true
		return out
	}
	if !c.outsideOutbox { // a test send has no row to have been given up
		switch c.status {
		case "pending":
		case "":
			out.unsent = true // its row was not found: handed back, claimed again later
			return out
		default:
			// Given up since the claim (an erasure: error "erased"); the record leaves it so.
			// Its body, in memory since the claim, must not leave.
			out.skipReason = "given up while claimed"
			return out
		}
	}
	if refusal := d.cfg.Policy.refusalAtSend(c.url); refusal != "" {
		out.err = refusal // a failed attempt, retried and at last given up like any other
		return out
	}
	// The attempt ends before the claim does, whatever delayed it since the claim was taken: by
	// this host's clock, from when the claim was asked for (the database's may differ).
	allowed := min(d.cfg.Timeout, c.leaseEnds.Add(-leaseMargin).Sub(now))
	if allowed < d.cfg.Timeout/2 {
		out.unsent = true
		return out
	}
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(allowed))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		out.err = "invalid target url"
		return out
	}
	setHeaders(req.Header, c, now)

	res, err := d.client.Do(req)
	if err != nil {
		out.took = time.Since(now)
		out.err = describe(err)
		return out
	}
	// The status decides; the body is read (a little of it) so the connection can be reused, and
	// the attempt's duration includes it.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	out.took = time.Since(now)
	out.status, out.header = res.StatusCode, res.Header
	if res.StatusCode < 200 || res.StatusCode > 299 {
		out.err = "HTTP " + strconv.Itoa(res.StatusCode)
		if res.StatusCode >= 300 && res.StatusCode < 400 {
			out.err += " (redirects are not followed)"
		}
	}
	return out
}

// setHeaders sets the headers of an attempt made at now: the contract's, and Standard Webhooks'.
// X-Service-Signature is exactly what the contract says, one hex digest, with the current
// secret. During a rotation the secrets it replaced sign too, each until its end, in
// webhook-signature, whose format (Standard Webhooks) carries several signatures.
func setHeaders(h http.Header, c claimed, now time.Time) {
	ts := now.Unix()
	standard := []string{verify.StandardSignature(c.secret, c.id, ts, c.body)}
	for _, replaced := range c.alsoSigning {
		if now.UnixMilli() < replaced.Until {
			standard = append(standard, verify.StandardSignature(replaced.Secret, c.id, ts, c.body))
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "funnel-webhooks/1")
	h.Set("X-Service-Event", c.eventType)
	h.Set("X-Service-Delivery", c.id)
	h.Set("X-Service-Signature", verify.ServiceSignature(c.secret, c.body))
	h.Set("webhook-id", c.id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", strings.Join(standard, " "))
}

// describe turns a transport error into a short message for the delivery log.
func describe(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout: no answer within the time limit"
	case strings.Contains(err.Error(), "refusing to dial"):
		return "refused: the target resolves to a private or loopback address"
	case strings.Contains(err.Error(), "connection refused"):
		return "connection refused"
	case strings.Contains(err.Error(), "server response headers exceeded"):
		return "the answer's headers exceed 64 KiB"
	}
	return logText(err.Error(), 300)
}

// logText is s as the delivery log can keep it: valid UTF-8 without NUL, at most limit bytes, cut
// on a character's boundary. A transport error may quote the receiver's own bytes (a malformed
// answer), and PostgreSQL refuses a text that is not UTF-8: one such error failed the record of
// every attempt of its batch, so those deliveries were sent again and again.
func logText(s string, limit int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
