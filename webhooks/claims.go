package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// claimed is a delivery this dispatcher holds a lease on, with its subscription's target and
// secrets.
type claimed struct {
	id, accountID, subscriptionID, eventType string
	// orderingKey: the deliveries of one key go one at a time, in order ("" for none).
	orderingKey string
	body        []byte
	// notOpened says why a sealed body could not be opened: the delivery fails unsent.
	notOpened             string
	attempts, maxAttempts int
	claimedUntil          int64 // the lease on the database's clock, which also tells this claim from a later one
	// leaseEnds is when the lease ends at the latest on this host's clock: the claim statement
	// was sent at leaseEnds less the lease, and the database started the lease after that.
	leaseEnds   time.Time
	url, secret string
	// alsoSigning are the secrets the current one replaced, each signing webhook-signature
	// beside it until its end (a rotation's 24 hours), newest first.
	alsoSigning        []olderSecret
	subscriptionStatus string
	// outsideOutbox marks a test send (sendNow): no row, so no status to check before sending.
	outsideOutbox bool
	// status is the delivery's own, read after its claim committed ("" when its row was not
	// found): an erasure, or the end of its subscription, may have given it up meanwhile.
	status string
}

// claimStatement leases ($1, until when) up to $3 deliveries due at $2; the caller adds what it
// returns. The walk (claimWalk) follows webhook_deliveries_pending_due, in the order deliveries
// are sent, and stops once it has $3: its cost is the deliveries it takes plus those it passes
// over (claimed, or waiting for an earlier one of their ordering key), not the length of the
// queue. Each check for an earlier pending delivery of the same ordering key is one probe of
// webhook_deliveries_pending_ordered. The OR (no ordering key) keeps that check a per-row subplan
// on PostgreSQL: never an anti-join, which would read every pending delivery (migration 19). Two
// deliveries of one event to one subscription share a position (a replay of an event whose
// original delivery is still pending): of those the older row goes first, then the smaller id,
// so that a key has one head and never two deliveries in flight.
//
// The limit is a subquery so that PostgreSQL plans it as a limit it does not know (it assumes a
// tenth of the rows) rather than as the constant n: without statistics, or with statistics taken
// before a replay, it expects a handful of pending rows, fewer than n, and then reading them all
// through a bitmap and sorting them looked as cheap as the ordered walk. Planned for a tenth of
// its rows, the walk wins whatever the estimate (claim_plans_test.go).
//
// On PostgreSQL the walk is an ARRAY(…), which runs once, and the rows it locked are updated by
// their physical address (ctid, a TID scan). Written as id IN (walk), PostgreSQL may run the walk
// again for every row of the table (a semi-join), and it did with the generic plan a prepared
// statement keeps once made on an empty table: each claim read the whole table, and since every
// run of the walk skips the rows the statement already updated, it took more than $3 (all 300
// due, of 16 asked, in the test). The addresses are stable: the rows stay locked by this
// statement until it updates them. One case takes fewer: a row another transaction changed and
// committed after this statement began is locked at its newest version, whose address the
// statement's snapshot does not see; it is left unclaimed, for the next claim.
func claimStatement(dialect sqldb.Dialect) string {
	return claimWhere(dialect, "")
}

// claimExceptStatement is claimStatement passing over the deliveries of the accounts in $4 (the
// slow ones, sendSlots): their rows are read and left, so a claim costs their due deliveries
// more, and only while an account is slow (Run paces it). The list is matched on account_id || ”,
// an expression PostgreSQL keeps no statistics of: on the column, once statistics showed the slow
// account's backlog, it expected the condition to leave a row or two, and read every due
// delivery through a bitmap to sort them rather than walk the index in order.
func claimExceptStatement(dialect sqldb.Dialect) string {
	except, _ := sqldb.AnyOf(dialect, "d.account_id || ''", 4, nil)
	return claimWhere(dialect, "AND NOT ("+except+")")
}

// claimForAccountStatement is claimStatement for the one account $4, passing over its
// subscriptions in $5 (those with their share in flight, sendSlots). It walks
// webhook_deliveries_pending_by_account, in the same order, and reads no other account's rows:
// event_position > 0 is that index's condition (migration 26), and subscription_id || ” hides
// the list from the statistics as in claimExceptStatement.
func claimForAccountStatement(dialect sqldb.Dialect) string {
	full, _ := sqldb.AnyOf(dialect, "d.subscription_id || ''", 5, nil)
	return claimWhere(dialect, "AND d.account_id = $4 AND d.event_position > 0 AND NOT ("+full+")")
}

// claimWhere is the claim of the deliveries claimWalk finds, with a further condition.
func claimWhere(dialect sqldb.Dialect, condition string) string {
	lease := `claimed_until = ` + dialect.NowMillis() + ` + $1`
	if dialect == sqldb.Postgres {
		return `UPDATE webhook_deliveries SET ` + lease + `
			WHERE ctid = ANY(ARRAY(SELECT d.ctid ` + claimWalk(dialect, condition) + ` FOR UPDATE OF d SKIP LOCKED))`
	}
	return `UPDATE webhook_deliveries SET ` + lease + ` WHERE id IN (SELECT d.id ` + claimWalk(dialect, condition) + `)`
}

// claimWalk finds up to $3 deliveries due at $2 that meet condition and no live claim holds, in
// the order they are sent (claimStatement). Due is on the schedule's clock (Config.Now); a claim
// is held by the database's, so that processes whose hosts' clocks disagree never take one
// another's claims ($1 is the lease's length).
func claimWalk(dialect sqldb.Dialect, condition string) string {
	return `FROM webhook_deliveries d
		WHERE d.status = 'pending' AND d.next_attempt_at <= $2 AND d.claimed_until < ` + dialect.NowMillis() + ` ` + condition + `
		  AND (d.ordering_key = '' OR NOT EXISTS (
			SELECT 1 FROM webhook_deliveries e
			WHERE e.subscription_id = d.subscription_id AND e.ordering_key = d.ordering_key
			  AND e.event_position <= d.event_position AND e.status = 'pending'
			  AND (e.event_position < d.event_position OR e.created_at < d.created_at
			    OR (e.created_at = d.created_at AND e.id < d.id))))
		ORDER BY d.next_attempt_at, d.event_position
		LIMIT (SELECT CAST($3 AS BIGINT))`
}

// claim takes up to n due deliveries for a lease, oldest first. A delivery waits while an earlier
// one with the same ordering key to the same subscription is still pending (decisions.md:
// per-resource order).
func (d *Dispatcher) claim(ctx context.Context, n int) ([]claimed, error) {
	batch, err := d.claimRows(ctx, claimStatement(d.db.Dialect), n)
	if err != nil {
		return nil, err
	}
	return d.attach(ctx, batch)
}

// claimShared is claim when some accounts are slow (sendSlots): every other account's deliveries
// first, up to n, then each slow account's, within its room. It reports whether the first claim
// took all it asked for (more may be due), and how long that claim, which passes over the slow
// accounts' due deliveries, took.
func (d *Dispatcher) claimShared(ctx context.Context, n int, slots *sendSlots, slow []string) (batch []claimed, full bool, passing time.Duration, err error) {
	_, except := sqldb.AnyOf(d.db.Dialect, "d.account_id", 4, slow) // claimExceptStatement's $4
	began := time.Now()
	batch, err = d.claimRows(ctx, claimExceptStatement(d.db.Dialect), n, except...)
	passing = time.Since(began)
	if err != nil {
		return nil, false, 0, err
	}
	full = len(batch) == n
	for _, account := range slow {
		taken, err := d.claimSlowAccount(ctx, account, min(slots.roomOf(account), n-len(batch)), slots)
		if err != nil {
			d.release(batch)
			return nil, false, 0, err
		}
		batch = append(batch, taken...)
	}
	batch, err = d.attach(ctx, batch)
	return batch, full, passing, err
}

// claimSlowAccount claims up to room deliveries of a slow account, oldest first, none of a
// subscription beyond its share: each statement asks for no more than the busiest of the
// subscriptions it may take from has left, so that an account's slow subscription, oldest in the
// queue, does not take its other subscriptions' slots.
func (d *Dispatcher) claimSlowAccount(ctx context.Context, account string, room int, slots *sendSlots) ([]claimed, error) {
	var batch []claimed
	taking := map[string]int{} // by subscription, in batch
	for room > 0 {
		full, busiest := slots.fullSubscriptions(account, taking)
		ask := min(room, slots.subscriptionShare-busiest)
		_, subs := sqldb.AnyOf(d.db.Dialect, "d.subscription_id", 5, full) // claimForAccountStatement's $5
		taken, err := d.claimRows(ctx, claimForAccountStatement(d.db.Dialect), ask, account, subs[0])
		if err != nil {
			d.release(batch)
			return nil, err
		}
		for _, c := range taken {
			taking[c.subscriptionID]++
		}
		batch, room = append(batch, taken...), room-len(taken)
		if len(taken) < ask {
			// Short: nothing more is due, unless it is of a subscription passed over for its
			// share, claimable once one of its sends ends.
			slots.moreDue[account] = len(full) > 0
			return batch, nil
		}
	}
	slots.moreDue[account] = true // not asked for more: some may be due
	return batch, nil
}

// claimRows runs a claim statement for up to n deliveries, with its arguments after the first
// three, and opens the bodies stored sealed.
func (d *Dispatcher) claimRows(ctx context.Context, statement string, n int, more ...any) ([]claimed, error) {
	now := d.cfg.Now().UnixMilli()
	leaseEnds := time.Now().Add(d.lease)
	// Prepared once on SQLite, which parses a statement's text every time it runs.
	rows, err := sqldb.Query(ctx, d.db.Write, statement+`
		RETURNING id, account_id, subscription_id, event_type, ordering_key, body, body_sealed, attempts, max_attempts, claimed_until`,
		append([]any{d.lease.Milliseconds(), now, n}, more...)...)
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	var out []claimed
	for rows.Next() {
		var c claimed
		var body string
		var sealed int
		if err := rows.Scan(&c.id, &c.accountID, &c.subscriptionID, &c.eventType, &c.orderingKey, &body, &sealed, &c.attempts, &c.maxAttempts, &c.claimedUntil); err != nil {
			rows.Close()
			return nil, fmt.Errorf("webhooks: scan claim: %w", err)
		}
		c.body, c.leaseEnds = []byte(body), leaseEnds
		if sealed == 1 {
			c.body, c.notOpened = d.openBody(c.id, body)
		}
		out = append(out, c)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("webhooks: claim: %w", err)
	}
	return out, nil
}

// attach reads the claimed deliveries' subscriptions (attachSubscriptions).
func (d *Dispatcher) attach(ctx context.Context, batch []claimed) ([]claimed, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	if err := d.attachSubscriptions(ctx, batch); err != nil {
		// Without its target nothing can be sent: hand the claims back, to be sent on the next
		// claim, rather than leave them to lapse or mistake them for deliveries to give up.
		d.release(batch)
		return nil, err
	}
	return batch, nil
}

// openBody opens a body the projector stored sealed (it carries a secret), for this delivery's
// attempt only: the opened body is never written back. A body that cannot be opened says why.
func (d *Dispatcher) openBody(deliveryID, sealed string) ([]byte, string) {
	body, err := d.opener.Open(sealed, bodySealing(deliveryID))
	if err != nil {
		return nil, fmt.Sprintf("not sent: its body %s: %v", errNotOpened, err)
	}
	return body, ""
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

// attachSubscriptions reads the target and secrets of each claimed delivery's subscription and,
// in the same statement, the delivery's own status now that its claim is committed: one read per
// claim, where the status took one per delivery, read again before each send.
func (d *Dispatcher) attachSubscriptions(ctx context.Context, batch []claimed) error {
	ids := map[string]bool{}
	var subIDs, deliveryIDs []string
	for _, c := range batch {
		if !ids[c.subscriptionID] {
			ids[c.subscriptionID] = true
			subIDs = append(subIDs, c.subscriptionID)
		}
		if !c.outsideOutbox {
			deliveryIDs = append(deliveryIDs, c.id)
		}
	}
	query, args := attachQuery(d.db.Dialect, subIDs, deliveryIDs)
	rows, err := sqldb.Query(ctx, d.db.Read, query, args...)
	if err != nil {
		return fmt.Errorf("webhooks: read subscriptions: %w", err)
	}
	defer rows.Close()
	type sub struct {
		url, secret, previous, older, status string
		until                                int64
		notOpened                            string
		alsoSigning                          []olderSecret
	}
	subs := map[string]sub{}
	statuses := map[string]string{} // of the deliveries, by id
	for rows.Next() {
		var kind, id string
		var s sub
		var sealed int
		if err := rows.Scan(&kind, &id, &s.url, &s.secret, &s.previous, &s.until, &s.older, &s.status, &sealed); err != nil {
			return fmt.Errorf("webhooks: scan subscription: %w", err)
		}
		if kind == "d" {
			statuses[id] = s.status
			continue
		}
		if sealed == 1 { // else a row from before secrets were sealed, not sealed yet (SealSubscriptionSecrets)
			secret, err := openSecret(d.opener, id, s.secret)
			if err != nil {
				s.notOpened = "not sent: the signing secret " + errNotOpened.Error() + ": " + err.Error() +
					"; rotate the subscription's secret to sign with a new one"
			}
			s.secret = secret
		}
		s.alsoSigning = d.replacedSecrets(id, s.previous, s.until, s.older, sealed == 1)
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
		batch[i].url, batch[i].secret, batch[i].alsoSigning, batch[i].subscriptionStatus = s.url, s.secret, s.alsoSigning, s.status
		batch[i].status = statuses[batch[i].id]
		if s.notOpened != "" && batch[i].notOpened == "" {
			batch[i].notOpened = s.notOpened
		}
	}
	return nil
}

// replacedSecrets are the secrets a subscription's current one replaced: previous_secret until
// previous_valid_until (opened when the row keeps its secrets sealed), then older_secrets (always
// sealed: written since secrets are). They only sign beside the current one, so one that cannot
// be read or opened (the key of a secret rotated away from an unreadable one) is left out.
func (d *Dispatcher) replacedSecrets(subscriptionID, previous string, previousUntil int64, olderText string, sealed bool) []olderSecret {
	var out []olderSecret
	if previous != "" {
		opened, err := previous, error(nil)
		if sealed {
			opened, err = openSecret(d.opener, subscriptionID, previous)
		}
		if err == nil {
			out = append(out, olderSecret{Secret: opened, Until: previousUntil})
		}
	}
	older, err := parseOlderSecrets(subscriptionID, olderText)
	if err != nil {
		d.log.Warn("the older signing secrets are left out", zap.String("subscription", subscriptionID), zap.Error(err))
	}
	for _, o := range older {
		if opened, err := openSecret(d.opener, subscriptionID, o.Secret); err == nil {
			out = append(out, olderSecret{Secret: opened, Until: o.Until})
		}
	}
	return out
}

// attachQuery is attachSubscriptions' statement and its arguments (sqldb.AnyOf: one text serves
// every claim, prepared once).
func attachQuery(dialect sqldb.Dialect, subIDs, deliveryIDs []string) (string, []any) {
	subs, args := sqldb.AnyOf(dialect, "id", 1, subIDs)
	query := `SELECT 's', id, url, secret, previous_secret, previous_valid_until, older_secrets, status, secrets_sealed FROM webhook_subscriptions WHERE ` + subs
	if len(deliveryIDs) > 0 {
		deliveries, more := sqldb.AnyOf(dialect, "id", len(args)+1, deliveryIDs)
		query += ` UNION ALL SELECT 'd', id, '', '', '', 0, '', status, 0 FROM webhook_deliveries WHERE ` + deliveries
		args = append(args, more...)
	}
	return query, args
}

// record writes the attempts and the next state of every delivery (keepRecording), then
// disables the subscriptions whose target is gone. It returns the error of the records it could
// not write, whose deliveries are sent again once their claims lapse. A delivery is
// only updated while this dispatcher's claim on it holds: if it lapsed (a record that came too
// late) and another claim took the delivery, that claim's own record decides. It returns when
// the soonest retry is due.
func (d *Dispatcher) record(stop context.Context, done []outcome) (soonest time.Time, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := d.cfg.Now()
	var updates [][]any
	attempts := map[string][]any{}
	givenUp, notOpened := map[string]bool{}, map[string]string{} // notOpened: why, by delivery
	leaseEnds := map[string]time.Time{}
	var gone, unsent []claimed
	// unblocked: a delivery of an ordering key finished (succeeded or was given up), and the next
	// of its key may be waiting for it.
	unblocked := false
	for _, o := range done {
		c := o.delivery
		if o.unsent {
			unsent = append(unsent, c)
			continue
		}
		leaseEnds[c.id] = c.leaseEnds
		if o.skipReason != "" {
			unblocked = unblocked || c.orderingKey != ""
			updates = append(updates, []any{c.id, c.claimedUntil, "failed", c.attempts, now.UnixMilli(), 0, o.skipReason, now.UnixMilli()})
			if o.notOpened {
				notOpened[c.id] = o.skipReason
			} else {
				givenUp[c.id] = true
			}
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
		unblocked = unblocked || status != "pending" && c.orderingKey != ""
		attempts[c.id] = []any{c.id, attempt, o.at.UnixMilli(), o.status, o.err, o.took.Milliseconds()}
		updates = append(updates, []any{c.id, c.claimedUntil, status, attempt, next.UnixMilli(), o.status, o.err, now.UnixMilli()})
		d.observer.DeliveryAttempted(result, o.took)
	}
	if len(unsent) > 0 {
		d.release(unsent)
		d.Wake() // they are due: claim them again, with a fresh lease
	}
	if len(updates) == 0 {
		return soonest, nil
	}
	// Rows are locked in id order, chunk after chunk, as every statement that updates several
	// deliveries at once does (Projector.stop, eraseDeliveries): two of them meeting on the same
	// deliveries wait for each other instead of deadlocking.
	slices.SortFunc(updates, func(a, b []any) int { return strings.Compare(a[0].(string), b[0].(string)) })
	dropped, unopened, err := d.keepRecording(stop, records{updates: updates, attempts: attempts, givenUp: givenUp, notOpened: notOpened, leaseEnds: leaseEnds})
	for range dropped {
		d.observer.DeliveryGivenUp()
	}
	for _, id := range unopened {
		d.observer.DeliveryNotOpened()
		d.log.Error("webhook delivery failed unsent", zap.String("delivery", id), zap.String("reason", notOpened[id]))
	}
	if unblocked {
		// The next delivery of a key that finished waits for it (claim): claim again now
		// rather than at the next poll, or a replayed billing subscription's events would go
		// one per poll. A delivery of no key holds nothing back: no claim for it.
		d.Wake()
	}
	d.trackFailures(ctx, done)
	for _, c := range gone {
		if err := d.disable(ctx, c.accountID, c.subscriptionID, ReasonGone); err != nil {
			d.log.Error("disable subscription after 410", zap.String("subscription", c.subscriptionID), zap.Error(err))
		}
	}
	return soonest, err
}

// records are what record writes of a batch of attempts: a row of each delivery's next state
// (updates, in id order), the attempt of each delivery sent, the deliveries given up and those
// whose body could not be opened (with why).
type records struct {
	updates   [][]any
	attempts  map[string][]any
	givenUp   map[string]bool
	notOpened map[string]string
	leaseEnds map[string]time.Time // by delivery: its claim's end on this host's clock (claimed)
}

// only is the records of one delivery, its row u.
func (r records) only(u []any) records {
	return records{updates: [][]any{u}, attempts: r.attempts, givenUp: r.givenUp, notOpened: r.notOpened, leaseEnds: r.leaseEnds}
}

// keepRecording writes records. A record lost lets its delivery's claim lapse, and the delivery
// is sent again, to a receiver that may have taken it already (each attempt once,
// operator-api.md). So while the database is unavailable (sqldb.Unavailable: a moment without
// it), the batch is written again, with a backoff, until the first of its claims would lapse or
// the dispatcher stops (stop ends: a stopping process does not wait for the database); and when
// the database refuses the batch for what it holds (a row it cannot take), each delivery's record
// is written on its own, once, so that one row loses no other.
func (d *Dispatcher) keepRecording(stop context.Context, r records) (dropped int, unopened []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dropped, unopened, err = d.writeRecords(ctx, r)
	if sqldb.Unavailable(err) && stop.Err() == nil {
		d.log.Warn("record delivery attempts: the database is unavailable, trying again until the claims lapse", zap.Error(err))
		dropped, unopened, err = d.recordAgain(ctx, stop, r)
	}
	gaveUp := sqldb.Unavailable(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if err == nil || gaveUp || len(r.updates) == 1 {
		return dropped, unopened, err
	}
	d.log.Warn("record delivery attempts: writing them one delivery at a time", zap.Error(err))
	var failed []error
	for _, u := range r.updates {
		n, ids, err := d.writeRecords(ctx, r.only(u))
		if sqldb.Unavailable(err) && stop.Err() == nil { // the database went away meanwhile
			n, ids, err = d.recordAgain(ctx, stop, r.only(u))
		}
		if err != nil {
			failed = append(failed, err)
			continue
		}
		dropped, unopened = dropped+n, append(unopened, ids...)
	}
	return dropped, unopened, errors.Join(failed...)
}

// recordAgain writes records again, with a backoff, while the database is unavailable, until
// the first of their claims would lapse or stop ends.
func (d *Dispatcher) recordAgain(ctx, stop context.Context, r records) (dropped int, unopened []string, err error) {
	// By this host's clock, from when each claim was asked for: the claims' own ends are on the
	// database's, which may differ.
	lapses := time.Duration(math.MaxInt64)
	for _, u := range r.updates {
		lapses = min(lapses, time.Until(r.leaseEnds[u[0].(string)]))
	}
	retry, cancel := context.WithTimeout(ctx, max(lapses, 0))
	defer cancel()
	defer context.AfterFunc(stop, cancel)()
	type written struct {
		dropped  int
		unopened []string
	}
	w, err := backoff.Retry(retry, func() (written, error) {
		n, ids, err := d.writeRecords(retry, r)
		if err != nil && !sqldb.Unavailable(err) {
			return written{}, backoff.Permanent(err)
		}
		return written{n, ids}, err
	}, backoff.WithBackOff(recordBackOff()))
	return w.dropped, w.unopened, err
}

// recordBackOff paces keepRecording's tries: soon at first, at most a second apart.
func recordBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 50*time.Millisecond, time.Second
	return b
}

// writeRecords writes records in one transaction (a few multi-row statements) and returns how
// many deliveries it gave up and which could not be opened.
func (d *Dispatcher) writeRecords(ctx context.Context, r records) (dropped int, unopened []string, err error) {
	// One transaction; on PostgreSQL pipelined (sqldb.WriteTx): BEGIN and the update in one round
	// trip, the attempts with the COMMIT in the next, where each statement took one.
	err = sqldb.WriteTx(ctx, d.db.Dialect, d.db.Write, func(tx sqldb.Applier) error {
		// The time is a value of each row, not part of the text: one text per number of rows
		// is a statement prepared once (pgx's cache; on SQLite, sqldb's).
		held, err := sqldb.QueryRowsStrings(ctx, tx, d.db.Dialect, `WITH v (id, claimed_until, status, attempts, next_attempt_at, status_code, error, updated_at) AS (VALUES `,
			`), locked AS (SELECT id FROM webhook_deliveries WHERE id IN (SELECT id FROM v) ORDER BY id`+d.db.ForUpdate()+`)
				UPDATE webhook_deliveries SET status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
				claimed_until = 0, last_status_code = v.status_code, last_error = v.error, updated_at = v.updated_at
				FROM v JOIN locked ON locked.id = v.id
				WHERE webhook_deliveries.id = v.id AND webhook_deliveries.claimed_until = v.claimed_until
				  AND webhook_deliveries.status = 'pending'
				RETURNING webhook_deliveries.id`,
			r.updates, "TEXT", "BIGINT", "TEXT", "INTEGER", "BIGINT", "INTEGER", "TEXT", "BIGINT")
		if err != nil {
			return fmt.Errorf("update deliveries: %w", err)
		}
		ended, err := d.endedWhileSending(ctx, tx, r.updates, held)
		if err != nil {
			return err
		}
		var attempted [][]any
		for _, id := range held {
			if a, ok := r.attempts[id]; ok {
				attempted = append(attempted, a)
			}
			if r.givenUp[id] {
				dropped++
			}
			if _, ok := r.notOpened[id]; ok {
				unopened = append(unopened, id)
			}
		}
		for _, id := range ended {
			if a, ok := r.attempts[id]; ok {
				attempted = append(attempted, a)
			}
		}
		if lapsed := len(r.updates) - len(held) - len(ended); lapsed > 0 {
			d.log.Warn("attempts recorded after their claim lapsed; the deliveries were claimed again and are recorded by that claim", zap.Int("deliveries", lapsed))
		}
		if err := sqldb.ExecRows(ctx, tx, d.db.Dialect, `INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms) VALUES `,
			` ON CONFLICT (delivery_id, attempt) DO NOTHING`, attempted); err != nil {
			return fmt.Errorf("insert attempts: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("webhooks: record attempts: %w", err)
	}
	return dropped, unopened, nil
}

// endedWhileSending releases the claims on deliveries that their subscription's end gave up while
// this dispatcher was sending them (the projector gives up every pending delivery, claimed or
// not, at once). They stay given up, counted once by the projector; the attempt made meanwhile
// is still recorded, as it was made. A delivery whose claim lapsed and was taken again is not one
// of them: its later claim records it.
func (d *Dispatcher) endedWhileSending(ctx context.Context, tx sqldb.Applier, updates [][]any, held []string) ([]string, error) {
	recorded := make(map[string]bool, len(held))
	for _, id := range held {
		recorded[id] = true
	}
	var rest [][]any
	for _, u := range updates {
		if !recorded[u[0].(string)] {
			rest = append(rest, []any{u[0], u[1]})
		}
	}
	if len(rest) == 0 {
		return nil, nil
	}
	ended, err := sqldb.QueryRowsStrings(ctx, tx, d.db.Dialect, `WITH v (id, claimed_until) AS (VALUES `,
		`) UPDATE webhook_deliveries SET claimed_until = 0
			FROM v WHERE webhook_deliveries.id = v.id AND webhook_deliveries.claimed_until = v.claimed_until
			  AND webhook_deliveries.status <> 'pending'
			RETURNING webhook_deliveries.id`,
		rest, "TEXT", "BIGINT")
	if err != nil {
		return nil, fmt.Errorf("release deliveries given up while sent: %w", err)
	}
	return ended, nil
}
