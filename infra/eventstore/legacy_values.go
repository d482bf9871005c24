package eventstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// Events recorded before personal values were sealed hold them in the clear, and no key can be
// destroyed for them. Their erasure nulls those values in place instead, in the transaction that
// appends ContactErased: DESIGN.md invariant 1 allows it (the personal values of an event made
// unreadable; its position, stream, version, type, time and other data unchanged). Events are
// never rewritten otherwise.

// legacyScrub is one event's data with the person's values nulled.
type legacyScrub struct {
	position int64
	data     string
}

// legacyFollowers are the event types that name their contact only through an earlier event of
// their stream (recorded before they carried contactId): a customer's renames, an activation's
// completion. A lead's title changes are none: every LeadUpdated ever recorded names its
// contact (contactId), as LeadCreated does.
var legacyFollowers = map[string]string{"CustomerCreated": "CustomerRenamed", "ActivationIssued": "ActivationCompleted"}

// laterPersonalTypes are the event types whose values became personal after sealing began: a
// lead's title (domain.LeadCreated). A contact sealed from its start may still have them in the
// clear, recorded before its leads' titles were sealed; they name the contact (contactId, and
// events.contact_id: lead events live on the lead's stream).
var laterPersonalTypes = []any{"LeadCreated", "LeadUpdated"}

// legacyScrubs finds the events of a contact that hold its personal values in the clear, and
// returns their data with those values nulled. For a contact created since sealing began, its
// creation tells in one look-up, only the types made personal since can hold any: they are
// looked for by the contact (events_by_contact), not through the account's events.
func (s *Store) legacyScrubs(ctx context.Context, accountID, contactID string) ([]legacyScrub, error) {
	var first string
	err := s.db.Read.QueryRowContext(ctx, `SELECT data FROM events WHERE stream_id = $1 AND version = 1`, contactID).Scan(&first)
	if err != nil {
		return nil, nil // no such stream: nothing to scrub
	}
	var found []plainEvent
	if strings.Contains(first, `"`+personalMember+`"`) { // sealed from its start
		args := append([]any{contactID, accountID}, laterPersonalTypes...)
		found, err = s.plainEvents(ctx, laterPersonalQuery(s.db.Dialect), args...)
	} else {
		var types []any
		for t := range domain.PersonalTypes() {
			types = append(types, t)
		}
		args := append([]any{accountID, "%" + contactID + "%"}, types...)
		found, err = s.plainEvents(ctx, `SELECT position, type, schema_version, data, stream_id FROM events WHERE account_id = $1 AND data LIKE $2 AND type IN (`+
			sqldb.Placeholders(s.db.Dialect, 3, len(types))+`)`, args...)
	}
	if err != nil {
		return nil, err
	}
	var scrubs []legacyScrub
	var followed []any
	for _, e := range found {
		ev, err := domain.DecodeEvent(e.eventType, e.version, []byte(e.data))
		if err != nil {
			return nil, fmt.Errorf("eventstore: event %d: %w", e.position, err)
		}
		if pe, ok := ev.(domain.PersonalEvent); !ok || pe.Person() != contactID {
			continue
		}
		if scrub, ok, err := scrubbed(e); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		} else {
			scrubs = append(scrubs, scrub)
		}
		if _, ok := legacyFollowers[e.eventType]; ok {
			followed = append(followed, e.streamID)
		}
	}
	if len(followed) > 0 {
		rest, err := s.plainEvents(ctx, `SELECT position, type, schema_version, data, stream_id FROM events WHERE type IN ('CustomerRenamed', 'ActivationCompleted') AND stream_id IN (`+
			sqldb.Placeholders(s.db.Dialect, 1, len(followed))+`)`, followed...)
		if err != nil {
			return nil, err
		}
		for _, e := range rest {
			if scrub, ok, err := scrubbed(e); err != nil {
				return nil, err
			} else if ok {
				scrubs = append(scrubs, scrub)
			}
		}
	}
	return scrubs, nil
}

type plainEvent struct {
	position        int64
	eventType, data string
	streamID        string
	version         int
}

// plainEvents reads events that hold no sealed values.
func (s *Store) plainEvents(ctx context.Context, query string, args ...any) ([]plainEvent, error) {
	rows, err := s.db.Read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read plain personal values: %w", err)
	}
	defer rows.Close()
	var out []plainEvent
	for rows.Next() {
		var e plainEvent
		if err := rows.Scan(&e.position, &e.eventType, &e.version, &e.data, &e.streamID); err != nil {
			return nil, fmt.Errorf("eventstore: read plain personal values: %w", err)
		}
		if !strings.Contains(e.data, `"`+personalMember+`"`) {
			out = append(out, e)
		}
	}
	return out, rows.Err()
}

// scrubbed is an event's data with every personal value null; false when it holds none.
func scrubbed(e plainEvent) (legacyScrub, bool, error) {
	values := personalValuesOf([]byte(e.data), domain.PersonalPaths(e.eventType))
	if len(values) == 0 {
		return legacyScrub{}, false, nil
	}
	data := withNulls([]byte(e.data), values)
	return legacyScrub{position: e.position, data: string(data)}, true, nil
}

// laterPersonalQuery reads the events of laterPersonalTypes that name a contact. Only
// events_by_contact may answer it: the account and the types are tested in a form no index
// can use, since PostgreSQL without statistics otherwise walked events_by_account_type, every
// lead event of the account, or ANDed it with the contact's entries (plans_test.go).
func laterPersonalQuery(dialect sqldb.Dialect) string {
	return `SELECT position, type, schema_version, data, stream_id FROM events WHERE contact_id = $1 AND COALESCE(account_id, '') = $2 AND COALESCE(type, '') IN (` +
		sqldb.Placeholders(dialect, 3, len(laterPersonalTypes)) + `)`
}
