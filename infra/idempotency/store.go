// Package idempotency keeps, for 24 hours, what the API answered to each request that carried an
// Idempotency-Key, so that a retry is answered the same and performs nothing again (the table
// idempotency_keys, migration 00010). It is a cache of answers, not state of the service: the
// changes the requests made are in the event log. api/httpapi/idempotency.go is its HTTP side;
// the requests, claims and answers they exchange, and the Store interface this Store implements,
// are the port's (api/httpapi/idempotent).
//
// A key goes through three states. running: an attempt claimed it and holds a lease, and whatever
// it appends carries the claim's id (events.idempotency_id, unique: the log takes one write per
// claim). performed: a command of the request succeeded and its result is kept, but no answer
// yet: the request did not answer within a short delay of its write (it waits for a relayed read
// model, say), or it ended with a 5xx after it, and a retry resumes from the result. done: the
// answer is kept. A request answered at once goes from running to done, two writes of its row
// (Claim, Complete). An attempt that stops without finishing leaves its lease to run out; the
// next retry takes the claim over and, when the key is running, asks the log whether its write
// was made (an attempt that stopped between its write and its answer, before its result was
// kept, leaves only that: the retry is told the request was performed, Orphaned).
package idempotency

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/api/httpapi/idempotent"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sqldb"
)

const (
	// Retention is how long a key is kept from its first use; an older one is free again.
	Retention = 24 * time.Hour
	// Lease is how long an attempt counts as in progress without finishing: after a crash, a
	// retry is answered "in progress" (409) that long at most. Correctness does not rest on it
	// (the log refuses a second write of a claim), only how soon a crashed attempt is taken over.
	Lease = 30 * time.Second
	// sweepBatch bounds the rows one statement of Sweep deletes.
	sweepBatch = 1000
)

// States of a key.
const (
	stateRunning   = "running"
	statePerformed = "performed"
	stateDone      = "done"
)

// Log tells whether the request of a claim was performed: whether an append carries its id.
type Log interface {
	HasIdempotencyID(ctx context.Context, id string) (bool, error)
}

// Store is the idempotency_keys table.
type Store struct {
	db     *sqldb.DB
	log    Log
	sealer *sealing.Sealer
	now    func() time.Time
}

// Store is the port's.
var _ idempotent.Store = (*Store)(nil)

// New returns the store. The sealer is the server key's (infra/sealing): a kept answer may hold
// what an API shows once (an API key, a webhook signing secret, an activation token), so the
// answers and results are kept sealed, and a copy of the database does not reveal them. now is
// the service's clock (app.Config.Now), which judges leases and the 24 hours.
func New(db *sqldb.DB, log Log, sealer *sealing.Sealer, now func() time.Time) *Store {
	return &Store{db: db, log: log, sealer: sealer, now: now}
}

// attempt is the store's record of the attempt that holds a key (idempotent.Claim.Attempt).
type attempt struct {
	scope, keyHash, id string
	// tookOver: the attempt took the key over from one whose lease ran out, which may only
	// have been slow and may still make its write (Release).
	tookOver bool
}

// attemptOf is the attempt of a claim; a claim this store did not hand out holds none, and its
// writes change no row.
func attemptOf(c idempotent.Claim) attempt {
	a, _ := c.Attempt.(attempt)
	return a
}

// claimRounds bounds how often Claim looks again when the key changes under it.
const claimRounds = 3

// Claim decides what to do with a request and, to perform or resume it, claims its key for this
// attempt. Two attempts at once on one key, in one process or several: one claims it, the other
// is told InProgress.
func (s *Store) Claim(ctx context.Context, req idempotent.Request) (idempotent.Claim, error) {
	keySum := sha256.Sum256([]byte(req.Key))
	att := attempt{scope: req.Scope, keyHash: hex.EncodeToString(keySum[:]), id: domain.NewID("att")}
	c := idempotent.Claim{Attempt: att}
	requestHash := hex.EncodeToString(req.Fingerprint[:])
	for range claimRounds {
		now := s.now().UnixMilli()
		c.ID = domain.NewID("idem")
		// A new key, or one kept longer than Retention, is this attempt's at once.
		n, err := s.exec(ctx, `INSERT INTO idempotency_keys (scope, key_hash, request_hash, claim_id, state, attempt, lease_until, outcome, status, content_type, body, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, '', 0, '', '', $8)
			ON CONFLICT (scope, key_hash) DO UPDATE SET request_hash = excluded.request_hash, claim_id = excluded.claim_id,
				state = excluded.state, attempt = excluded.attempt, lease_until = excluded.lease_until, outcome = '',
				status = 0, content_type = '', body = '', created_at = excluded.created_at
			WHERE idempotency_keys.created_at <= $9`,
			att.scope, att.keyHash, requestHash, c.ID, stateRunning, att.id, now+Lease.Milliseconds(), now, now-Retention.Milliseconds())
		if err != nil {
			return idempotent.Claim{}, err
		}
		if n == 1 {
			c.Decision = idempotent.Perform
			return c, nil
		}
		row, found, err := s.read(ctx, att.scope, att.keyHash, now)
		if err != nil {
			return idempotent.Claim{}, err
		}
		if !found {
			continue // released or expired meanwhile: claim it again
		}
		if row.requestHash != requestHash {
			return idempotent.Claim{Decision: idempotent.Mismatch}, nil
		}
		c.ID = row.claimID
		switch {
		case row.state == stateDone:
			body, err := s.open(c, "body", row.body)
			if errors.Is(err, sealing.ErrUnknownKey) {
				return idempotent.Claim{Decision: idempotent.Unreadable}, nil
			}
			if err != nil {
				return idempotent.Claim{}, err
			}
			if erased, err := s.namesErased(ctx, body); err != nil {
				return idempotent.Claim{}, err
			} else if erased {
				return erasedReplay(), nil
			}
			return idempotent.Claim{Decision: idempotent.Replay, Response: idempotent.Response{Status: row.status, ContentType: row.contentType, Body: body}}, nil
		case row.leaseUntil > now:
			return idempotent.Claim{Decision: idempotent.InProgress}, nil
		}
		// The attempt that held the key stopped, or gave it up unanswered: take it over.
		n, err = s.exec(ctx, `UPDATE idempotency_keys SET attempt = $1, lease_until = $2
			WHERE scope = $3 AND key_hash = $4 AND attempt = $5 AND state = $6`,
			att.id, now+Lease.Milliseconds(), att.scope, att.keyHash, row.attempt, row.state)
		if err != nil {
			return idempotent.Claim{}, err
		}
		if n == 0 {
			continue // another retry took it first, or its attempt moved on: look again
		}
		if row.state == statePerformed {
			if c.Outcomes, err = s.open(c, "outcome", row.outcome); errors.Is(err, sealing.ErrUnknownKey) {
				return idempotent.Claim{Decision: idempotent.Unreadable}, nil
			} else if err != nil {
				return idempotent.Claim{}, err
			}
			// An answer rebuilt from the outcomes is checked as a kept one is (namesErased): the
			// contact they name may have been erased since, by an erasure cut short before it
			// rewrote them (ForgetContact), or that ran while this key was still running.
			if erased, err := s.namesErased(ctx, c.Outcomes); err != nil {
				return idempotent.Claim{}, err
			} else if erased {
				if err := s.keepErasedAnswer(ctx, c); err != nil {
					return idempotent.Claim{}, err
				}
				return erasedReplay(), nil
			}
			c.Decision = idempotent.Resume
			return c, nil
		}
		att.tookOver = true
		c.Attempt = att
		performed, err := s.log.HasIdempotencyID(ctx, c.ID)
		if err != nil {
			return idempotent.Claim{}, err
		}
		if performed {
			c.Decision = idempotent.Orphaned
		} else {
			c.Decision = idempotent.Perform
		}
		return c, nil
	}
	return idempotent.Claim{Decision: idempotent.InProgress}, nil
}

// keyRow is a row of idempotency_keys.
type keyRow struct {
	requestHash, claimID, state, attempt string
	leaseUntil                           int64
	outcome, body, contentType           string
	status                               int
}

// read returns the key's row unless it is older than Retention.
func (s *Store) read(ctx context.Context, scope, keyHash string, now int64) (keyRow, bool, error) {
	var r keyRow
	err := s.db.Read.QueryRowContext(ctx, `SELECT request_hash, claim_id, state, attempt, lease_until, outcome, status, content_type, body
		FROM idempotency_keys WHERE scope = $1 AND key_hash = $2 AND created_at > $3`, scope, keyHash, now-Retention.Milliseconds()).
		Scan(&r.requestHash, &r.claimID, &r.state, &r.attempt, &r.leaseUntil, &r.outcome, &r.status, &r.contentType, &r.body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return r, false, nil
	case err != nil:
		return r, false, fmt.Errorf("idempotency: read key: %w", err)
	}
	return r, true, nil
}

// KeepOutcomes keeps what the commands of the claim's request returned while the request goes on
// (its answer is late): from then on a retry answers from them (Resume) rather than performing
// again. It never moves a key that is done back: the kept answer stays.
func (s *Store) KeepOutcomes(ctx context.Context, c idempotent.Claim, outcomes []byte) error {
	a := attemptOf(c)
	sealed, err := s.seal(c, "outcome", outcomes)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `UPDATE idempotency_keys SET state = $1, outcome = $2
		WHERE scope = $3 AND key_hash = $4 AND claim_id = $5 AND state <> $6`,
		statePerformed, sealed, a.scope, a.keyHash, c.ID, stateDone)
	return err
}

// Complete keeps the answer of the claim's request; later retries get it (Replay). When two
// attempts of one claim both answer (one took over from the other), the first kept answer stays.
func (s *Store) Complete(ctx context.Context, c idempotent.Claim, res idempotent.Response) error {
	a := attemptOf(c)
	sealed, err := s.seal(c, "body", res.Body)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `UPDATE idempotency_keys SET state = $1, lease_until = 0, outcome = '', status = $2, content_type = $3, body = $4
		WHERE scope = $5 AND key_hash = $6 AND claim_id = $7 AND state <> $1`,
		stateDone, res.Status, res.ContentType, sealed, a.scope, a.keyHash, c.ID)
	return err
}

// seal seals what goes to a column (body or outcome) of a claim's row, bound to the column, the
// scope, the key and the claim: a sealed text copied into another row, column or use of the key
// does not open.
func (s *Store) seal(c idempotent.Claim, column string, plain []byte) (string, error) {
	sealed, err := s.sealer.Seal(plain, associatedData(c, column))
	if err != nil {
		return "", fmt.Errorf("idempotency: seal the %s: %w", column, err)
	}
	return sealed, nil
}

func (s *Store) open(c idempotent.Claim, column, sealed string) ([]byte, error) {
	plain, err := s.sealer.Open(sealed, associatedData(c, column))
	if err != nil {
		return nil, fmt.Errorf("idempotency: open the kept %s: %w", column, err)
	}
	return plain, nil
}

func associatedData(c idempotent.Claim, column string) []byte {
	a := attemptOf(c)
	return []byte("idempotency_keys." + column + "\x00" + a.scope + "\x00" + a.keyHash + "\x00" + c.ID)
}

// Release forgets a key whose request performed nothing (refused as bad input, say), so that a
// retry with it, corrected or not, is performed afresh. Only the attempt holding it releases it.
func (s *Store) Release(ctx context.Context, c idempotent.Claim) error {
	a := attemptOf(c)
	if a.tookOver {
		// The attempt this one took over from may only have been slow, and have made the write
		// since (its outcome is kept only with its answer, or after a delay): then the key is
		// not free. It is left to the next retry, which finds the write in the log.
		performed, err := s.log.HasIdempotencyID(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("idempotency: %w", err)
		}
		if performed {
			return s.Yield(ctx, c)
		}
	}
	_, err := s.exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key_hash = $2 AND attempt = $3 AND state = $4`,
		a.scope, a.keyHash, a.id, stateRunning)
	return err
}

// Yield gives up the lease of an attempt that ends without an answer to keep (a 5xx): the next
// retry takes the key over at once, and resumes from the kept outcomes, or asks the log.
func (s *Store) Yield(ctx context.Context, c idempotent.Claim) error {
	a := attemptOf(c)
	_, err := s.exec(ctx, `UPDATE idempotency_keys SET lease_until = 0 WHERE scope = $1 AND key_hash = $2 AND attempt = $3 AND state <> $4`,
		a.scope, a.keyHash, a.id, stateDone)
	return err
}

// KeepOutcomesAndYield is KeepOutcomes and Yield in one statement, for an attempt that ends
// without an answer to keep after its commands succeeded (a 5xx, a panic): the next retry takes
// the key over at once and resumes from the outcomes. The outcomes are kept whichever attempt
// holds the key (they are what the log holds under the claim); only the attempt holding it gives
// its lease up. A key that is done keeps its answer.
func (s *Store) KeepOutcomesAndYield(ctx context.Context, c idempotent.Claim, outcomes []byte) error {
	a := attemptOf(c)
	sealed, err := s.seal(c, "outcome", outcomes)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `UPDATE idempotency_keys SET state = $1, outcome = $2,
			lease_until = CASE WHEN attempt = $3 THEN 0 ELSE lease_until END
		WHERE scope = $4 AND key_hash = $5 AND claim_id = $6 AND state <> $7`,
		statePerformed, sealed, a.id, a.scope, a.keyHash, c.ID, stateDone)
	return err
}

// Sweep deletes the keys older than Retention, sweepBatch rows per statement (each its own
// transaction, so that appends go on between them), and returns how many it deleted.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	cutoff := s.now().Add(-Retention).UnixMilli()
	var total int64
	for {
		n, err := s.exec(ctx, `DELETE FROM idempotency_keys WHERE (scope, key_hash) IN
			(SELECT scope, key_hash FROM idempotency_keys WHERE created_at <= $1 ORDER BY created_at LIMIT $2)`, cutoff, sweepBatch)
		total += n
		if err != nil || n < sweepBatch {
			return total, err
		}
	}
}

// exec runs one write (sqldb.ExecDerived: its commit does not wait for the disk) and returns the
// number of rows it changed.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.db.ExecDerived(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("idempotency: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("idempotency: %w", err)
	}
	return n, nil
}
