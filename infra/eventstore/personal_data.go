package eventstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	json "github.com/goccy/go-json"
	"strings"
	"sync"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// Crypto-shredding (docs/architecture.md, "Erasure"): the personal values of an event
// (domain.PersonalPaths) are stored as null in its data, and sealed together, under the key of
// the contact they belong to, in one member:
//
//	"$personal": {"contactId": "ct_…", "sealed": "v1.<key id>.<…>"}
//
// Every read of the log puts them back in place before anyone sees the data, so the domain, the
// projections and the webhooks read the events as they were written. Erasing the contact
// destroys its key (person_keys, in the transaction that appends ContactErased): from then on the
// values read as the nulls they are stored as, wherever a copy of the log is. Only the store
// knows any of this.

// personalMember is the member of stored data that holds the sealed personal values.
const personalMember = "$personal"

// ServerSealer seals the persons' keys with the server key (infra/sealing.Sealer).
type ServerSealer interface {
	Seal(plaintext, associatedData []byte) (string, error)
	Open(sealed string, associatedData []byte) ([]byte, error)
}

// sealedPersonal is the stored form of an event's personal values.
type sealedPersonal struct {
	ContactID string `json:"contactId"`
	Sealed    string `json:"sealed"`
}

// SealPersonalData makes the store seal the personal values of the events it appends under their
// contact's key, itself sealed with server. Call it before the first append; without it (the
// store's own tests, tools that only read) values are stored as they are, and sealed ones read as
// null.
func (s *Store) SealPersonalData(server ServerSealer) {
	s.keys = &personKeys{db: s.db, server: server, sealing: map[string]*sealing.Sealer{}, opened: map[string]*sealing.Sealer{}, keyless: map[string]bool{}}
}

// personKeys gives the key of each person: for sealing, kept in memory once read (a key that
// another process destroys since seals values nobody can open again, and the append's
// transaction refuses them, erasure_race.go); for opening, always as the database holds it
// now, so that no process opens a value after its key was destroyed anywhere.
type personKeys struct {
	db     *sqldb.DB
	server ServerSealer

	mu      sync.Mutex
	sealing map[string]*sealing.Sealer // contact id → its key, for sealing
	opened  map[string]*sealing.Sealer // sealed key text → the key it seals: saves opening it again
	// keyless holds the contacts that had no key when Erased last looked (a write looks just
	// before it seals), so that the seal makes one without reading again. Only a hint: a key
	// stored since makes the append's insert of the new one fail (errKeyTaken), and the retry reads.
	keyless map[string]bool
}

// keptKeys bounds each map of personKeys: past it, the map starts again empty. A key kept costs
// about a kilobyte (its cipher and its maps). With 2,048 in each map the service spent twice the
// CPU per upsert at 32 clients on PostgreSQL, most of it in the garbage collector, and took 40%
// fewer upserts than without sealing; with 256 (or 16) that cost was gone (docs/performance.md,
// "What sealing costs"). Little is lost: a write to a contact reads its key anyway, with its
// erasure check (Erased), and a read opens a key missed again in microseconds.
const keptKeys = 256

// personKeyData binds a person's sealed key to the contact: it opens for no other.
func personKeyData(contactID string) []byte { return []byte("person-key\x00" + contactID) }

// newPersonKey is a key made for a contact that had none: the append that first seals under it
// stores it, in its transaction (storeNewKeys).
type newPersonKey struct {
	contactID, accountID, sealed string
	key                          *sealing.Sealer
}

// forSealing returns the key to seal a contact's values with, or domain.ErrContactErased. For a
// contact without a key it makes one, returned as fresh too: the append must store it.
func (k *personKeys) forSealing(ctx context.Context, accountID, contactID string) (*sealing.Sealer, *newPersonKey, error) {
	k.mu.Lock()
	key := k.sealing[contactID]
	keyless := k.keyless[contactID]
	delete(k.keyless, contactID)
	k.mu.Unlock()
	if key != nil {
		return key, nil, nil
	}
	if keyless {
		return k.make(accountID, contactID)
	}
	var stored sql.NullString
	var erasedAt sql.NullInt64
	err := k.db.Read.QueryRowContext(ctx, readKey, contactID).Scan(&stored, &erasedAt)
	switch {
	case err == nil && !stored.Valid:
		return nil, nil, domain.ErrContactErased
	case err == nil:
		if key, err = k.open(contactID, stored.String); err != nil {
			return nil, nil, err
		}
		k.keep(contactID, key)
		return key, nil, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, nil, fmt.Errorf("eventstore: key of %s: %w", contactID, err)
	}
	return k.make(accountID, contactID)
}

// make makes a new key for a contact, to be stored by the append that seals under it.
func (k *personKeys) make(accountID, contactID string) (*sealing.Sealer, *newPersonKey, error) {
	text, err := sealing.NewKey()
	if err != nil {
		return nil, nil, fmt.Errorf("eventstore: %w", err)
	}
	sealedKey, err := k.server.Seal([]byte(text), personKeyData(contactID))
	if err != nil {
		return nil, nil, fmt.Errorf("eventstore: seal a person's key: %w", err)
	}
	parsed, err := sealing.ParseKey(text)
	if err != nil {
		return nil, nil, fmt.Errorf("eventstore: %w", err)
	}
	key, err := sealing.New(parsed)
	if err != nil {
		return nil, nil, fmt.Errorf("eventstore: %w", err)
	}
	return key, &newPersonKey{contactID: contactID, accountID: accountID, sealed: sealedKey, key: key}, nil
}

// keep remembers a contact's key for sealing.
func (k *personKeys) keep(contactID string, key *sealing.Sealer) {
	k.mu.Lock()
	if len(k.sealing) >= keptKeys {
		clear(k.sealing)
	}
	k.sealing[contactID] = key
	k.mu.Unlock()
}

// noteKeyless remembers that a contact had no key when looked up (keyless).
func (k *personKeys) noteKeyless(contactID string) {
	k.mu.Lock()
	if len(k.keyless) >= keptKeys {
		clear(k.keyless)
	}
	k.keyless[contactID] = true
	k.mu.Unlock()
}

// storeNewKeys stores, in an append's transaction, the keys its events were sealed under that
// were made for it, after its events (each key's row is keyed by its contact's first event, which
// may be one of them). Another append may have stored a key for the same contact since it looked
// (or erased it): then what this one sealed would open with no stored key, so the insert fails on
// the table's primary key, the append with errKeyTaken (isPersonKeyTaken), and Append seals the
// events again, under the key stored. One statement stores the group's keys: on PostgreSQL it
// reads nothing back and goes with the rest of the append in one round trip.
func storeNewKeys(ctx context.Context, tx appendTx, dialect sqldb.Dialect, keys []*newPersonKey) error {
	if len(keys) == 0 {
		return nil
	}
	if dialect == sqldb.Postgres {
		ids, accounts, sealed := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
		for i, nk := range keys {
			ids[i], accounts[i], sealed[i] = nk.contactID, nk.accountID, nk.sealed
		}
		if _, err := tx.ExecContext(ctx, pgStoreKeys, ids, accounts, sealed); err != nil {
			return fmt.Errorf("eventstore: store persons' keys: %w", err)
		}
		return nil
	}
	for start := 0; start < len(keys); start += sqliteKeysAStatement {
		part := keys[start:min(start+sqliteKeysAStatement, len(keys))]
		values := make([]string, len(part))
		args := make([]any, 0, 3*len(part))
		for i, nk := range part {
			values[i] = "(" + sqldb.Placeholders(dialect, len(args)+1, 3) + ")"
			args = append(args, nk.contactID, nk.accountID, nk.sealed)
		}
		res, err := tx.ExecContext(ctx, fmt.Sprintf(sqliteStoreKeys, strings.Join(values, ", ")), args...)
		if err != nil {
			return fmt.Errorf("eventstore: store persons' keys: %w", err)
		}
		// A key whose contact has no first event joins no row (rather than a rowid made up).
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("eventstore: store persons' keys: %w", err)
		}
		if n != int64(len(part)) {
			return fmt.Errorf("eventstore: %d of %d persons' keys: %w", len(part)-int(n), len(part), errKeyWithoutFirstEvent)
		}
	}
	return nil
}

// The statements that store new keys, keyed by the position of each contact's first event
// (migration 29, person_key_rows): a new contact's first event is in the same append, so a
// group's new keys go to the end of the table, and a read finds a key through the log's
// (stream_id, version) index (the person_keys view). A contact without a first event must fail
// the append rather than store a key nothing would find: on PostgreSQL its position is NULL,
// which the primary key refuses; on SQLite, whose rowid would make one up, its key joins no
// event, which storeNewKeys counts.
const (
	// pgStoreKeys stores a group's keys ($1 the contacts, $2 their accounts, $3 the keys sealed).
	pgStoreKeys = `INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key)
		SELECT (SELECT position FROM events WHERE stream_id = k.contact_id AND version = 1), k.contact_id, k.account_id, k.sealed_key
		  FROM unnest($1::text[], $2::text[], $3::text[]) AS k (contact_id, account_id, sealed_key)`
	// sqliteStoreKeys stores keys given as VALUES rows of (contact, account, key sealed), %s.
	// CROSS JOIN: the listed keys first, then each contact's first event on the stream index.
	sqliteStoreKeys = `INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key)
		SELECT e.position, e.stream_id, k.column2, k.column3 FROM (VALUES %s) AS k CROSS JOIN events AS e
		 WHERE e.stream_id = k.column1 AND e.version = 1`
)

// sqliteKeysAStatement bounds the keys of one statement: 3 parameters each, well under SQLite's
// 32,766. The write connection keeps a statement prepared up to 2 KB of text (DB.Applier): the
// keys of up to about a hundred new contacts.
const sqliteKeysAStatement = 200

// storedOne checks, on SQLite, that eraseKeyOf wrote the contact's row; on PostgreSQL the
// primary key did.
func storedOne(dialect sqldb.Dialect, res sql.Result, contactID string) error {
	if dialect != sqldb.SQLite {
		return nil
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("the contact %s has no first event in the log (%d rows, %v)", contactID, n, err)
	}
	return nil
}

// errKeyWithoutFirstEvent fails an append that made a key for a contact whose first event it
// did not find (storeNewKeys): Append tries again, a little later, as the append creating the
// contact may be about to commit.
var errKeyWithoutFirstEvent = errors.New("eventstore: a person's key names a contact whose first event is not in the log")

// errKeyTaken fails an append whose new key lost to another one (storeNewKeys).
var errKeyTaken = errors.New("eventstore: another append stored a key for the contact first")

// open returns the key a sealed key text holds.
func (k *personKeys) open(contactID, sealedKey string) (*sealing.Sealer, error) {
	k.mu.Lock()
	key := k.opened[sealedKey]
	k.mu.Unlock()
	if key != nil {
		return key, nil
	}
	text, err := k.server.Open(sealedKey, personKeyData(contactID))
	if err != nil {
		return nil, fmt.Errorf("eventstore: open the key of %s: %w", contactID, err)
	}
	parsed, err := sealing.ParseKey(string(text))
	if err != nil {
		return nil, fmt.Errorf("eventstore: key of %s: %w", contactID, err)
	}
	key, err = sealing.New(parsed)
	if err != nil {
		return nil, fmt.Errorf("eventstore: key of %s: %w", contactID, err)
	}
	k.mu.Lock()
	if len(k.opened) >= keptKeys {
		clear(k.opened)
	}
	k.opened[sealedKey] = key
	k.mu.Unlock()
	return key, nil
}

// forOpening returns the live keys of some contacts as the database holds them now; an erased
// contact, or one with no key, is absent.
func (k *personKeys) forOpening(ctx context.Context, contactIDs []string) (map[string]*sealing.Sealer, error) {
	query, args := openableAmong(k.db.Dialect, contactIDs)
	rows, err := sqldb.Query(ctx, k.db.Read, query, args...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read persons' keys: %w", err)
	}
	defer rows.Close()
	out := make(map[string]*sealing.Sealer, len(contactIDs))
	for rows.Next() {
		var id, sealedKey string
		if err := rows.Scan(&id, &sealedKey); err != nil {
			return nil, fmt.Errorf("eventstore: read persons' keys: %w", err)
		}
		if out[id], err = k.open(id, sealedKey); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventstore: read persons' keys: %w", err)
	}
	return out, nil
}

// forget drops what this process keeps of an erased contact's key.
func (k *personKeys) forget(contactID string) {
	k.mu.Lock()
	delete(k.sealing, contactID)
	clear(k.opened)
	k.mu.Unlock()
}

// forgetIfKept is forget when this process still keeps the contact's key for sealing, and
// nothing otherwise: Erased finds erased contacts on every look-up of an email whose earlier
// contacts were erased, and emptying the opened keys each time would make every read open them
// again.
func (k *personKeys) forgetIfKept(contactID string) {
	k.mu.Lock()
	_, kept := k.sealing[contactID]
	k.mu.Unlock()
	if kept {
		k.forget(contactID)
	}
}

// eraseKeyOf is the statement that destroys a contact's key ($1 the contact, $2 its account, $3
// when) in the append transaction of its ContactErased; a contact that never had one (its events
// predate sealing) gets the row that says it is erased. The row is keyed as a new key's is,
// and a contact without a first event fails the erasure the same way.
func eraseKeyOf(dialect sqldb.Dialect) string {
	const onConflict = ` ON CONFLICT (first_position) DO UPDATE SET sealed_key = NULL, erased_at = excluded.erased_at`
	if dialect == sqldb.SQLite {
		return `INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key, erased_at)
			SELECT position, stream_id, $2, NULL, $3 FROM events WHERE stream_id = $1 AND version = 1` + onConflict
	}
	return `INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key, erased_at)
		VALUES ((SELECT position FROM events WHERE stream_id = $1 AND version = 1), $1, $2, NULL, $3)` + onConflict
}

// personalData is an event's data as sealPersonal prepares it for its row.
type personalData struct {
	stored, plain []byte // the data to store, and the data with its personal values in place
	person        string // the contact whose values stored seals; "" when it seals none
	// nulled is, for a record kept after erasure, the data with the person's values null: what
	// the append records instead when its transaction finds the person erased (afterErasures).
	nulled []byte
}

// sealPersonal returns the data to store for an event, and its plain data (for the inline
// projections and the recent events): data itself, twice, or, for an event with personal values
// of a contact, data with those values null and sealed under the contact's key, bound to the
// event's id, and data as it is.
//
// An erased contact's values are refused (domain.ErrContactErased: a write to the contact after
// its erasure is a 404), except in an event that records money of a transaction outliving its
// person (domain.RecordKeptAfterErasure, a refund): that one is recorded with the values null,
// stored and plain alike, as every event of the person reads since the erasure, so that neither
// the log nor what the projections and webhooks make of the event holds any of them. The key
// this process keeps may be one another process destroyed since, or this one a moment from now:
// the append's transaction decides that (erasure_race.go), and person and nulled are for it.
//
// fresh holds the keys made by earlier events of the same append, by contact: one append makes
// at most one key per contact, and adds to it the one it makes here.
func (s *Store) sealPersonal(ctx context.Context, accountID, eventID string, e domain.Event, data []byte, fresh map[string]*newPersonKey) (personalData, error) {
	pe, ok := e.(domain.PersonalEvent)
	if !ok || s.keys == nil || pe.Person() == "" {
		return personalData{stored: data, plain: data}, nil
	}
	paths := domain.PersonalPaths(e.EventType())
	if paths == nil {
		return personalData{stored: data, plain: data}, nil
	}
	values := personalValuesOf(data, paths)
	if len(values) == 0 {
		return personalData{stored: data, plain: data}, nil
	}
	var nulled []byte
	if _, kept := e.(domain.RecordKeptAfterErasure); kept {
		nulled = withNulls(data, values)
	}
	var key *sealing.Sealer
	if made := fresh[pe.Person()]; made != nil {
		key = made.key
	} else {
		var made *newPersonKey
		var err error
		key, made, err = s.keys.forSealing(ctx, accountID, pe.Person())
		if nulled != nil && errors.Is(err, domain.ErrContactErased) {
			return personalData{stored: nulled, plain: nulled}, nil
		}
		if err != nil {
			return personalData{}, err
		}
		if made != nil {
			fresh[pe.Person()] = made
		}
	}
	sealed, err := key.Seal(encodeValues(values), []byte(eventID))
	if err != nil {
		return personalData{}, fmt.Errorf("eventstore: %s: %w", e.EventType(), err)
	}
	member, err := json.Marshal(sealedPersonal{ContactID: pe.Person(), Sealed: sealed})
	if err != nil {
		return personalData{}, fmt.Errorf("eventstore: %s: %w", e.EventType(), err)
	}
	stored, err := sealedData(data, values, `"`+personalMember+`":`+string(member))
	if err != nil {
		return personalData{}, fmt.Errorf("eventstore: %s: %w", e.EventType(), err)
	}
	return personalData{stored: stored, plain: data, person: pe.Person(), nulled: nulled}, nil
}

// OpenPersonal puts the sealed personal values of events back in their data, in place; the
// values of an erased contact stay null. It reads the keys of the contacts concerned once.
func (s *Store) OpenPersonal(ctx context.Context, events []domain.Recorded) error {
	marker := []byte(`"` + personalMember + `"`)
	type sealedEvent struct {
		i    int
		rest []byte // the data without its sealed member
		p    sealedPersonal
	}
	var sealed []sealedEvent
	persons := map[string]bool{}
	var ids []string
	for i := range events {
		if !bytes.Contains(events[i].Data, marker) {
			continue
		}
		rest, p, ok := splitSealed(events[i].Data)
		if !ok {
			continue // the name is in a value, not a member of the event
		}
		sealed = append(sealed, sealedEvent{i: i, rest: rest, p: p})
		if id := p.ContactID; id != "" && !persons[id] {
			persons[id] = true
			ids = append(ids, id)
		}
	}
	if len(sealed) == 0 {
		return nil
	}
	keys := map[string]*sealing.Sealer{}
	if s.keys != nil && len(ids) > 0 {
		var err error
		if keys, err = s.keys.forOpening(ctx, ids); err != nil {
			return err
		}
	}
	for _, e := range sealed {
		data, err := openValues(e.rest, e.p, events[e.i], keys)
		if err != nil {
			return err
		}
		events[e.i].Data = data
	}
	return nil
}

// splitSealed returns an event's data without its sealed member, and that member; false when the
// data has none.
func splitSealed(data []byte) ([]byte, sealedPersonal, bool) {
	rest, member := withoutMember(data, personalMember)
	if !member.IsObject() {
		return data, sealedPersonal{}, false
	}
	return rest, sealedPersonal{ContactID: member.Get("contactId").String(), Sealed: member.Get("sealed").String()}, true
}

// openData is the data of one event with its personal values back, or null if keys lacks its
// contact's.
func openData(e domain.Recorded, keys map[string]*sealing.Sealer) (json.RawMessage, error) {
	rest, p, ok := splitSealed(e.Data)
	if !ok {
		return e.Data, nil
	}
	return openValues(rest, p, e, keys)
}

// openValues puts the values sealed in p back into rest, an event's data without its sealed
// member; without the key of p's contact (erased) they stay the nulls they are stored as.
func openValues(rest []byte, p sealedPersonal, e domain.Recorded, keys map[string]*sealing.Sealer) (json.RawMessage, error) {
	key := keys[p.ContactID]
	if key == nil {
		return rest, nil
	}
	plain, err := key.Open(p.Sealed, []byte(e.ID))
	if err == nil {
		rest, err = withValues(rest, plain)
	}
	if err != nil {
		return nil, fmt.Errorf("eventstore: event %d: personal values: %w", e.Position, err)
	}
	return rest, nil
}

// MayBeNewContact is told of a contact a command takes for new without asking Erased
// (commands.NewContactHint): the next seal of its values makes it a key without reading one.
func (s *Store) MayBeNewContact(contactID string) {
	if s.keys != nil {
		s.keys.noteKeyless(contactID)
	}
}

// Erased tells whether a contact was erased: its id is spent, and a new contact of its email
// takes the next one (commands.Repository.contactIDFor). A write asks it right before it seals
// the contact's values, so the answer primes the keys for sealing: the key, or that there is none
// (a new contact), saving the seal a read of its own.
func (s *Store) Erased(ctx context.Context, contactID string) (bool, error) {
	var sealedKey sql.NullString
	var erasedAt sql.NullInt64
	err := s.db.Read.QueryRowContext(ctx, readKey, contactID).Scan(&sealedKey, &erasedAt)
	if errors.Is(err, sql.ErrNoRows) {
		if s.keys != nil {
			s.keys.noteKeyless(contactID)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("eventstore: is %s erased: %w", contactID, err)
	}
	if s.keys != nil && sealedKey.Valid {
		key, err := s.keys.open(contactID, sealedKey.String)
		if err != nil {
			return false, err
		}
		s.keys.keep(contactID, key)
	}
	if s.keys != nil && erasedAt.Valid { // erased by another process since this one kept its key
		s.keys.forgetIfKept(contactID)
	}
	return erasedAt.Valid, nil
}
