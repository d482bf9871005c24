package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/webhooks/verify"
)

// Config tunes delivery.
type Config struct {
	Schedule    Schedule
	Policy      TargetPolicy
	Timeout     time.Duration // an answer must come within it (10 s)
	Concurrency int           // deliveries in flight at once
	Poll        time.Duration // how often due retries are looked for
}

// Observer is told about every attempt, and every delivery given up unsent (metrics).
type Observer interface {
	DeliveryAttempted(outcome string, took time.Duration)
	DeliveryGivenUp()
}

// Disabler disables a subscription whose target answered 410 Gone.
type Disabler func(ctx context.Context, accountID, subscriptionID, reason string) error

// Dispatcher sends due deliveries. Deliveries are claimed for a lease before they are sent, so
// two dispatchers (in one process or several) never send one delivery at the same time; a
// dispatcher that dies mid-send leaves its claims to expire, and the delivery is sent again
// later with the same ids and body.
type Dispatcher struct {
	db       *sqldb.DB
	cfg      Config
	client   *http.Client
	disable  Disabler
	observer Observer
	log      *zap.Logger
	wake     chan struct{}
	lease    time.Duration

	mu      sync.Mutex
	soonest time.Time // the soonest retry the recorder scheduled, for the retry timer
}

// NewDispatcher builds a dispatcher.
func NewDispatcher(db *sqldb.DB, cfg Config, disable Disabler, observer Observer, log *zap.Logger) *Dispatcher {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: cfg.Policy.dialControl}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, out of reach of the address check
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   max(cfg.Concurrency, 2),
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	return &Dispatcher{
		db:  db,
		cfg: cfg,
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is an answer like any other: a failure, retried later (decisions.md).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		disable:  disable,
		observer: observer,
		log:      log.Named("webhooks"),
		wake:     make(chan struct{}, 1),
		// Longer than any attempt can take, so a claim never lapses mid-send; short, so the
		// deliveries a crashed dispatcher held are retried soon after.
		lease: cfg.Timeout + 5*time.Second,
	}
}

// Wake makes the dispatcher look for due deliveries now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

type claimed struct {
	id, accountID, subscriptionID, eventType string
	body                                     []byte
	attempts, maxAttempts                    int
	claimedUntil                             int64 // the lease, which also tells this claim from a later one
	url, secret, previous                    string
	previousUntil                            int64
	subscriptionStatus                       string
}

type outcome struct {
	delivery   claimed
	at         time.Time
	status     int
	err        string
	took       time.Duration
	header     http.Header
	skipReason string // not sent: the subscription ended meanwhile
	unsent     bool   // not sent: too little of the claim was left; the claim is handed back
}

// leaseMargin separates the end of an attempt from the end of its claim, so that the attempt is
// recorded while the claim still holds and no other dispatcher can be sending it meanwhile.
const leaseMargin = 2 * time.Second

// Run sends deliveries until ctx ends, then waits for the ones in flight. Claiming and
// recording run apart: a slow record transaction never holds up the next claim. A delivery stays
// claimed until its attempt is recorded, so it cannot be sent twice meanwhile.
func (d *Dispatcher) Run(ctx context.Context) error {
	results := make(chan outcome, d.cfg.Concurrency)
	freed := make(chan struct{}, d.cfg.Concurrency)
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		d.recordResults(results)
	}()
	inflight := 0
	ticker := time.NewTicker(d.cfg.Poll)
	defer ticker.Stop()
	// retryTimer fires when the soonest retry this dispatcher scheduled is due; the ticker
	// catches the rest (retries scheduled by other processes, a delivery that was in flight).
	retryTimer := time.NewTimer(time.Hour)
	defer retryTimer.Stop()
	// Claim when something may have become due (a wake, a tick, a retry), or when half the
	// sends finished: claiming on every finished send would cost a query per delivery.
	mayClaim := true
	for {
		if free := d.cfg.Concurrency - inflight; mayClaim && free > 0 && ctx.Err() == nil {
			batch, err := d.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				d.log.Error("claim deliveries", zap.Error(err))
			}
			for _, c := range batch {
				inflight++
				go func() {
					results <- d.send(c)
					freed <- struct{}{}
				}()
			}
		}
		if ctx.Err() != nil && inflight == 0 {
			close(results)
			<-recorded
			return nil
		}
		mayClaim = false
		select {
		case <-freed:
			inflight--
			mayClaim = inflight <= d.cfg.Concurrency/2
		case <-d.wake:
			mayClaim = true
		case <-ticker.C:
			mayClaim = true
		case <-retryTimer.C:
			mayClaim = true
		case <-ctx.Done():
		}
		if due := d.takeSoonest(); !due.IsZero() {
			retryTimer.Reset(max(time.Until(due), 0))
		}
	}
}

// recordResults records attempts as they come, in batches, until results is closed.
func (d *Dispatcher) recordResults(results <-chan outcome) {
	for r := range results {
		done := []outcome{r}
	drain:
		for {
			select {
			case r, ok := <-results:
				if !ok {
					break drain
				}
				done = append(done, r)
			default:
				break drain
			}
		}
		soonest, err := d.record(done)
		if err != nil {
			// The claims lapse and the deliveries are sent again: never lost, maybe repeated.
			d.log.Error("record delivery attempts", zap.Error(err))
		}
		if !soonest.IsZero() {
			d.mu.Lock()
			if d.soonest.IsZero() || soonest.Before(d.soonest) {
				d.soonest = soonest
			}
			d.mu.Unlock()
			d.Wake()
		}
	}
}

// takeSoonest returns, and forgets, the soonest retry recorded since the last call.
func (d *Dispatcher) takeSoonest() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	due := d.soonest
	d.soonest = time.Time{}
	return due
}

// claim takes up to n due deliveries for a lease. A delivery waits while an earlier one with the
// same ordering key to the same subscription is still pending (decisions.md: per-resource order).
func (d *Dispatcher) claim(ctx context.Context, n int) ([]claimed, error) {
	now := time.Now().UnixMilli()
	lock := ""
	if d.db.Dialect == sqldb.Postgres {
		lock = " FOR UPDATE OF d SKIP LOCKED"
	}
	until := now + d.lease.Milliseconds()
	rows, err := d.db.Write.QueryContext(ctx, `UPDATE webhook_deliveries SET claimed_until = $1
		WHERE id IN (
			SELECT d.id FROM webhook_deliveries d
			WHERE d.status = 'pending' AND d.next_attempt_at <= $2 AND d.claimed_until < $2
			  AND (d.ordering_key = '' OR NOT EXISTS (
				SELECT 1 FROM webhook_deliveries e
				WHERE e.subscription_id = d.subscription_id AND e.ordering_key = d.ordering_key
				  AND e.event_position < d.event_position AND e.status = 'pending'))
			ORDER BY d.next_attempt_at, d.event_position
			LIMIT $3`+lock+`)
		RETURNING id, account_id, subscription_id, event_type, body, attempts, max_attempts`,
		until, now, n)
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	var out []claimed
	for rows.Next() {
		var c claimed
		var body string
		if err := rows.Scan(&c.id, &c.accountID, &c.subscriptionID, &c.eventType, &body, &c.attempts, &c.maxAttempts); err != nil {
			rows.Close()
			return nil, fmt.Errorf("webhooks: scan claim: %w", err)
		}
		c.body, c.claimedUntil = []byte(body), until
		out = append(out, c)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	if err := d.attachSubscriptions(ctx, out); err != nil {
		// Without its target nothing can be sent: hand the claims back, to be sent on the next
		// claim, rather than leave them to lapse or mistake them for deliveries to give up.
		d.release(out)
		return nil, err
	}
	return out, nil
}

// release gives claims back unused. It runs even when the dispatcher is stopping.
func (d *Dispatcher) release(batch []claimed) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range batch {
		if _, err := d.db.Write.ExecContext(ctx, `UPDATE webhook_deliveries SET claimed_until = 0 WHERE id = $1 AND claimed_until = $2`, c.id, c.claimedUntil); err != nil {
			d.log.Warn("release a claim; it lapses by itself", zap.String("delivery", c.id), zap.Error(err))
			return
		}
	}
}

// attachSubscriptions reads the target and secrets of each claimed delivery's subscription.
func (d *Dispatcher) attachSubscriptions(ctx context.Context, batch []claimed) error {
	ids := map[string]bool{}
	var args []any
	for _, c := range batch {
		if !ids[c.subscriptionID] {
			ids[c.subscriptionID] = true
			args = append(args, c.subscriptionID)
		}
	}
	rows, err := d.db.Read.QueryContext(ctx, `SELECT id, url, secret, previous_secret, previous_valid_until, status FROM webhook_subscriptions WHERE id IN (`+sqldb.Placeholders(d.db.Dialect, 1, len(args))+`)`, args...)
	if err != nil {
		return fmt.Errorf("webhooks: read subscriptions: %w", err)
	}
	defer rows.Close()
	type sub struct {
		url, secret, previous, status string
		until                         int64
	}
	subs := map[string]sub{}
	for rows.Next() {
		var id string
		var s sub
		if err := rows.Scan(&id, &s.url, &s.secret, &s.previous, &s.until, &s.status); err != nil {
			return fmt.Errorf("webhooks: scan subscription: %w", err)
		}
		subs[id] = s
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("webhooks: read subscriptions: %w", err)
	}
	for i := range batch {
		s, ok := subs[batch[i].subscriptionID]
		if !ok {
			s.status = "missing" // deliveries are recorded with their subscription: never expected
		}
		batch[i].url, batch[i].secret, batch[i].previous, batch[i].previousUntil, batch[i].subscriptionStatus = s.url, s.secret, s.previous, s.until, s.status
	}
	return nil
}

// send makes one attempt.
func (d *Dispatcher) send(c claimed) outcome {
	now := time.Now()
	out := outcome{delivery: c, at: now}
	if c.subscriptionStatus != "active" {
		out.skipReason = "given up: subscription " + c.subscriptionStatus
		return out
	}
	// The attempt ends before the claim does, whatever delayed it since the claim was taken.
	deadline := now.Add(d.cfg.Timeout)
	if leaseEnd := time.UnixMilli(c.claimedUntil).Add(-leaseMargin); leaseEnd.Before(deadline) {
		deadline = leaseEnd
	}
	if deadline.Sub(now) < d.cfg.Timeout/2 {
		out.unsent = true
		return out
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		out.err = "invalid target url"
		return out
	}
	// X-Service-Signature is exactly what the contract says, one hex digest, with the current
	// secret. During a rotation the previous secret signs too, in webhook-signature, whose
	// format (Standard Webhooks) carries several signatures.
	ts := now.Unix()
	standard := []string{verify.StandardSignature(c.secret, c.id, ts, c.body)}
	if c.previous != "" && now.UnixMilli() < c.previousUntil {
		standard = append(standard, verify.StandardSignature(c.previous, c.id, ts, c.body))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "funnel-webhooks/1")
	req.Header.Set("X-Service-Event", c.eventType)
	req.Header.Set("X-Service-Delivery", c.id)
	req.Header.Set("X-Service-Signature", verify.ServiceSignature(c.secret, c.body))
	req.Header.Set("webhook-id", c.id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", strings.Join(standard, " "))

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
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

// record writes the attempts and the next state of every delivery in one transaction (a few
// multi-row statements), then disables the subscriptions whose target is gone. A delivery is
// only updated while this dispatcher's claim on it holds: if it lapsed (a record that came too
// late) and another claim took the delivery, that claim's own record decides. It returns when
// the soonest retry is due.
func (d *Dispatcher) record(done []outcome) (soonest time.Time, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	var updates [][]any
	attempts := map[string][]any{}
	givenUp := map[string]bool{}
	var gone, unsent []claimed
	for _, o := range done {
		c := o.delivery
		if o.unsent {
			unsent = append(unsent, c)
			continue
		}
		if o.skipReason != "" {
			updates = append(updates, []any{c.id, c.claimedUntil, "failed", c.attempts, now.UnixMilli(), 0, o.skipReason})
			givenUp[c.id] = true
			continue
		}
		attempt := c.attempts + 1
		status, next, result := "pending", now, "retrying"
		switch {
		case o.err == "":
			status, result = "succeeded", "succeeded"
		case o.status == http.StatusGone:
			status, result = "failed", "gone"
			gone = append(gone, c)
		case attempt >= c.maxAttempts:
			status, result = "failed", "failed"
		default:
			wait, ok := d.cfg.Schedule.retryAfter(o.status, o.header, now)
			if !ok {
				wait = d.cfg.Schedule.delayAfter(attempt)
			}
			next = now.Add(wait)
			if soonest.IsZero() || next.Before(soonest) {
				soonest = next
			}
		}
		attempts[c.id] = []any{c.id, attempt, o.at.UnixMilli(), o.status, o.err, o.took.Milliseconds()}
		updates = append(updates, []any{c.id, c.claimedUntil, status, attempt, next.UnixMilli(), o.status, o.err})
		d.observer.DeliveryAttempted(result, o.took)
	}
	if len(unsent) > 0 {
		d.release(unsent)
		d.Wake() // they are due: claim them again, with a fresh lease
	}
	if len(updates) == 0 {
		return soonest, nil
	}
	tx, err := d.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return soonest, fmt.Errorf("webhooks: begin: %w", err)
	}
	defer tx.Rollback()
	held, err := sqldb.QueryRowsStrings(ctx, tx, d.db.Dialect, `WITH v (id, claimed_until, status, attempts, next_attempt_at, status_code, error) AS (VALUES `,
		fmt.Sprintf(`) UPDATE webhook_deliveries SET status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
			claimed_until = 0, last_status_code = v.status_code, last_error = v.error, updated_at = %d
			FROM v WHERE webhook_deliveries.id = v.id AND webhook_deliveries.claimed_until = v.claimed_until
			RETURNING webhook_deliveries.id`, now.UnixMilli()),
		updates, "TEXT", "BIGINT", "TEXT", "INTEGER", "BIGINT", "INTEGER", "TEXT")
	if err != nil {
		return soonest, fmt.Errorf("webhooks: update deliveries: %w", err)
	}
	var attempted [][]any
	dropped := 0
	for _, id := range held {
		if a, ok := attempts[id]; ok {
			attempted = append(attempted, a)
		}
		if givenUp[id] {
			dropped++
		}
	}
	if lapsed := len(updates) - len(held); lapsed > 0 {
		d.log.Warn("attempts recorded after their claim lapsed; the deliveries were claimed again and are recorded by that claim", zap.Int("deliveries", lapsed))
	}
	if err := sqldb.ExecRows(ctx, tx, d.db.Dialect, `INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms) VALUES `,
		` ON CONFLICT (delivery_id, attempt) DO NOTHING`, attempted); err != nil {
		return soonest, fmt.Errorf("webhooks: record attempts: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return soonest, fmt.Errorf("webhooks: commit attempts: %w", err)
	}
	for range dropped {
		d.observer.DeliveryGivenUp()
	}
	for _, c := range gone {
		if err := d.disable(ctx, c.accountID, c.subscriptionID, "the target answered 410 Gone"); err != nil {
			d.log.Error("disable subscription after 410", zap.String("subscription", c.subscriptionID), zap.Error(err))
		}
	}
	return soonest, nil
}
