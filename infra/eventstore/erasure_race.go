package eventstore

import (
	"fmt"
	"slices"

	"github.com/funnelhq/funnel/domain"
)

// Writes racing an erasure (docs/architecture.md, "Erasure"). A write seals a person's values in
// its caller's goroutine (encode), with the key its process keeps in memory, and the append
// commits later: the person may be erased in between, by another process, whose erasure this
// one's key cache never hears of, or by this one. Nothing before the commit can tell, and a write
// to another stream than the contact's (a lead's title, an activation's completion, a refund)
// meets no version of the contact's stream to fail on. So the append's transaction itself asks
// person_keys, before it takes its positions, whether the persons whose values it sealed are
// erased (ErasedAmong): a request sealing an erased person's values is refused
// (domain.ErrContactErased, the 404 of a write to an erased contact), and a record kept after
// erasure (domain.RecordKeptAfterErasure, a refund) is recorded with those values null instead
// (row.nulled), in the log and in the plain copy the inline projections, the recent events and
// so the webhooks get.
//
// The check must be ordered with the erasure. On SQLite the one writer orders them. On
// PostgreSQL, where appends commit side by side, every append takes an advisory lock for each
// person it seals values of, names (a lead's move, whose row the leads projection writes whole) or
// erases (one lock per group of persons, personLockGroups), before the check and before its
// positions: exclusive for the groups of the persons a batch erases, shared for the others (taken
// in one statement in the locks' order, so two batches never wait for each other in a circle). An append that locked first commits wholly before the erasure takes
// its positions, so it lands before it and is erased with the rest (the erasure's inline
// statements, made after its lock, see its rows); one that locks after waits for the erasure's
// commit, and its check, a later statement, sees the key destroyed. Either way the log's order is
// the order of the commits for that person, and no plain value follows its ContactErased.
// Decision: a check in the append's transaction rather than a read before it (the erasure could
// commit right after the read), and a lock per group of persons rather than per account (an
// erasure then holds up the writes of a 64th of the persons, for its own transaction only, even in
// a batch of 256 appends for as many persons: their groups are locked shared). Each
// lock costs PostgreSQL's shared lock table an entry for the transaction's life; that table holds
// max_locks_per_transaction × max_connections entries (6,400 by default) for every session
// together, so a lock per person (up to 256 in a batch of upserts, two appenders a process, several
// processes) could fill it ("out of shared memory") where 64 groups cannot. The statements ride in
// the append's first round trip.

// personLock is the first key of the advisory locks that order a person's writes with the
// person's erasure; the second is the person's group, hashtext of the contact id modulo
// personLockGroups.
const personLock int32 = 0x70657273 // "pers"

// personLockGroups is how many locks persons share: at most this many per append.
const personLockGroups = 64

// Taken in the order of their keys, one statement for the batch's persons: pgLockPersonsShared
// ($2 the persons), or, in a batch that erases, pgLockPersons ($3 the persons erased, whose groups
// are taken exclusively).
var (
	pgLockPersonsShared = fmt.Sprintf(`SELECT pg_advisory_xact_lock_shared($1, h) FROM (SELECT DISTINCT hashtext(id) & %d AS h FROM unnest($2::text[]) AS id ORDER BY h) AS k`,
		personLockGroups-1)
	pgLockPersons = fmt.Sprintf(`SELECT CASE WHEN erased THEN pg_advisory_xact_lock($1, h) END, CASE WHEN NOT erased THEN pg_advisory_xact_lock_shared($1, h) END
		FROM (SELECT hashtext(id) & %d AS h, bool_or(id = ANY($3::text[])) AS erased FROM unnest($2::text[]) AS id GROUP BY 1 ORDER BY 1) AS k`,
		personLockGroups-1)
)

// guard is what an append transaction orders against erasures before it takes positions.
type guard struct {
	persons []string // every contact the batch seals values of, names or erases: locked
	erased  []string // the persons the batch erases: their groups are locked exclusively
	sealed  []string // the contacts whose values the batch sealed: checked
}

// guardOf returns the guard of a batch. A person whose values a request sealed under a key it
// made itself is not checked: that key's insert fails on the row an erasure left (storeNewKeys,
// errKeyTaken), and the retry reads the erasure; the check would only repeat it, a statement in
// the append's transaction (on SQLite, in the one writer's time) for every new contact.
func guardOf(batch []*appendRequest) guard {
	var g guard
	sealed, persons := map[string]bool{}, map[string]bool{}
	for _, req := range batch {
		for _, st := range req.streams {
			for _, r := range st.rows {
				if r.person != "" && !sealed[r.person] && !req.makesKeyOf(r.person) {
					sealed[r.person] = true
					g.sealed = append(g.sealed, r.person)
				}
				for _, id := range []string{r.person, r.contactID.String, r.erases} {
					if id != "" && !persons[id] {
						persons[id] = true
						g.persons = append(g.persons, id)
					}
				}
				if r.erases != "" && !slices.Contains(g.erased, r.erases) {
					g.erased = append(g.erased, r.erases)
				}
			}
		}
	}
	return g
}

// makesKeyOf tells whether the request sealed a person's values under a key made for it.
func (req *appendRequest) makesKeyOf(person string) bool {
	for _, nk := range req.newKeys {
		if nk.contactID == person {
			return true
		}
	}
	return false
}

// afterErasures applies to a request what its transaction found erased: the values of a record
// kept after erasure are nulled, and a request sealing another event's values of an erased
// person is refused.
func afterErasures(req *appendRequest, erased map[string]bool) error {
	if len(erased) == 0 {
		return nil
	}
	for _, st := range req.streams {
		for _, r := range st.rows {
			if !erased[r.person] {
				continue
			}
			if r.nulled == "" {
				return domain.ErrContactErased
			}
			r.sealed = &sealedValues{data: r.data, plain: r.plain, person: r.person}
			r.data, r.plain, r.person = r.nulled, r.nulled, ""
		}
	}
	return nil
}

// sealedValues are a row's values before afterErasures nulled them.
type sealedValues struct{ data, plain, person string }

// unnull gives a batch's rows back the values afterErasures nulled in an earlier try of their
// transaction: a batch that failed is tried again one request at a time (Store.commit), and an
// erasure that shared it may not be recorded then, so each try decides anew.
func unnull(batch []*appendRequest) {
	for _, req := range batch {
		for _, st := range req.streams {
			for _, r := range st.rows {
				if r.sealed != nil {
					r.data, r.plain, r.person, r.sealed = r.sealed.data, r.sealed.plain, r.sealed.person, nil
				}
			}
		}
	}
}
