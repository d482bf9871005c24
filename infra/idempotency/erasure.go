package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/funnelhq/funnel/api/httpapi/idempotent"
)

// erasedAnswer is what a kept answer that showed an erased contact becomes: a retry of its
// request is answered that the contact is gone, and is not performed again.
var erasedAnswer = []byte(`{"code":"not_found","error":"contact not found"}` + "\n")

// ForgetContact rewrites the kept answers and outcomes that show an erased contact
// (decisions.md "Erasure": the Idempotency-Key answers keep nothing of the person). Every answer
// that shows the person names the contact's id (a contact, a submission, a booking, a lead, a
// purchase's customer name it) or the id of one of its customers or activations (an
// activation's completion shows the buyer's email and externalUserId, and names only the
// activation and its customer; its kept outcome only the activation): the log tells those ids
// (ContactStreams), in one read of the contact's entries. The account's kept answers, at most a
// day's, and the operator's, are opened in memory and those naming any of these ids are
// replaced by a 404 "contact not found": a retry of the request is told the contact is gone, and
// is still not performed twice. The erasure's own answer or outcome (erasureOwn) is left as it
// is: a retry of the erasure gets its answer again. It returns how many it rewrote.
func (s *Store) ForgetContact(ctx context.Context, accountID, contactID string) (int, error) {
	ids := [][]byte{[]byte(contactID)}
	if streams, ok := s.log.(ContactStreams); ok {
		more, err := streams.StreamsOfContact(ctx, accountID, contactID)
		if err != nil {
			return 0, fmt.Errorf("idempotency: forget contact %s: %w", contactID, err)
		}
		for _, id := range more {
			ids = append(ids, []byte(id))
		}
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT scope, key_hash, claim_id, state, outcome, body FROM idempotency_keys
		WHERE scope = $1 OR scope LIKE 'operator:%'`, "account:"+accountID)
	if err != nil {
		return 0, fmt.Errorf("idempotency: read kept answers: %w", err)
	}
	var showing []idempotent.Claim
	for rows.Next() {
		var a attempt
		var c idempotent.Claim
		var state, outcome, body string
		if err := rows.Scan(&a.scope, &a.keyHash, &c.ID, &state, &outcome, &body); err != nil {
			rows.Close()
			return 0, fmt.Errorf("idempotency: read kept answers: %w", err)
		}
		c.Attempt = a
		for column, sealed := range map[string]string{"outcome": outcome, "body": body} {
			if sealed == "" {
				continue
			}
			plain, err := s.open(c, column, sealed)
			if err != nil {
				continue // sealed under a retired key: unreadable already
			}
			if namesAny(plain, ids) && !erasureOwn(plain) {
				showing = append(showing, c)
				break
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("idempotency: read kept answers: %w", err)
	}
	for _, c := range showing {
		if err := s.keepErasedAnswer(ctx, c); err != nil {
			return 0, fmt.Errorf("idempotency: forget contact %s: %w", contactID, err)
		}
	}
	return len(showing), nil
}

// namesAny tells whether a kept answer or outcome names one of ids.
func namesAny(plain []byte, ids [][]byte) bool {
	for _, id := range ids {
		if bytes.Contains(plain, id) {
			return true
		}
	}
	return false
}

// keepErasedAnswer makes erasedAnswer the kept answer of a claim, in place of its answer or
// outcomes, which showed an erased contact.
func (s *Store) keepErasedAnswer(ctx context.Context, c idempotent.Claim) error {
	sealed, err := s.seal(c, "body", erasedAnswer)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `UPDATE idempotency_keys SET state = $1, lease_until = 0, outcome = '', status = 404,
			content_type = 'application/json; charset=utf-8', body = $2 WHERE scope = $3 AND key_hash = $4 AND claim_id = $5`,
		stateDone, sealed, attemptOf(c).scope, attemptOf(c).keyHash, c.ID)
	return err
}

// Erasures tells whether a contact was erased. The Log given to New (the event store) answers
// it; a Log that does not is taken to know of no erasure.
type Erasures interface {
	Erased(ctx context.Context, contactID string) (bool, error)
}

// ContactStreams finds the customers and activations of a contact, whose answers show the
// person without naming the contact's id, and the contact of such a stream. The Log given to New
// (the event store) answers it; with a Log that does not, only answers naming the contact are
// found.
type ContactStreams interface {
	StreamsOfContact(ctx context.Context, accountID, contactID string) ([]string, error)
	ContactOfStream(ctx context.Context, streamID string) (string, error)
}

// personIDs finds the ids an answer names that stand for a person: a contact's
// (domain.IsContactID's form), a customer's or an activation's.
var personIDs = regexp.MustCompile(`(?:ct|cus|act)_[a-z0-9]{26}`)

// namesErased tells whether a kept answer or outcome names an erased contact, or a customer or
// an activation of one. ForgetContact rewrites such answers when an erasure finishes; an erasure
// that a crash interrupted after its ContactErased was recorded never ran it, and its client may
// never retry. So every replay asks too, and so does every resumption of kept outcomes, whose
// answer would be rebuilt from them (only retries: a retry's cost, one look-up per contact
// named, and one per customer or activation, for its contact): no kept answer shows a contact
// once its erasure is in the log, whatever became of the process that recorded it.
//
// The erasure's own answer or outcome names the contact it erased, and is replayed or resumed as
// it was (erasureOwn).
func (s *Store) namesErased(ctx context.Context, plain []byte) (bool, error) {
	erasures, ok := s.log.(Erasures)
	if !ok || erasureOwn(plain) {
		return false, nil
	}
	streams, _ := s.log.(ContactStreams)
	seen := map[string]bool{}
	for _, found := range personIDs.FindAll(plain, -1) {
		id := string(found)
		if seen[id] {
			continue
		}
		seen[id] = true
		if !bytes.HasPrefix(found, []byte("ct_")) {
			if streams == nil {
				continue
			}
			contact, err := streams.ContactOfStream(ctx, id)
			if err != nil {
				return false, fmt.Errorf("idempotency: %w", err)
			}
			if contact == "" || seen[contact] {
				continue
			}
			id = contact
			seen[id] = true
		}
		erased, err := erasures.Erased(ctx, id)
		if err != nil {
			return false, fmt.Errorf("idempotency: %w", err)
		}
		if erased {
			return true, nil
		}
	}
	return false, nil
}

// eraseCommand is the command of an erasure (commands.EraseContact), as kept outcomes name it.
const eraseCommand = "EraseContact"

// erasureOwn tells whether a kept answer or outcome is an erasure's own, which names the contact
// it erased and shows nothing else of it (ids and a time): the answer is the one with a
// top-level "erasure"; the outcomes (commands.Outcome: [{"command", "result"}]) are the erasure
// command's alone.
func erasureOwn(plain []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(plain, &top) == nil {
		return top["erasure"] != nil
	}
	var outcomes []struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(plain, &outcomes) != nil || len(outcomes) == 0 {
		return false
	}
	for _, o := range outcomes {
		if o.Command != eraseCommand {
			return false
		}
	}
	return true
}

// erasedReplay is the replay of a kept answer that named a contact erased since.
func erasedReplay() idempotent.Claim {
	return idempotent.Claim{Decision: idempotent.Replay, Response: idempotent.Response{
		Status: 404, ContentType: "application/json; charset=utf-8", Body: erasedAnswer}}
}
