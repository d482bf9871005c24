package eventstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// A server-key rotation (FUNNEL_SECRET_KEY=NEW,OLD, docs/architecture.md "Secrets") must leave
// nothing the service needs sealed with OLD, or dropping OLD later loses it. The persons' keys
// (person_key_rows) are sealed with the server key and needed for as long as their contact lives:
// without its key no event of the person opens again (the feed, replays, upserts of the email:
// every read of the log holding the person's values). So serve seals them again with NEW, in the
// background (ResealPersonKeys): a table of millions of contacts takes minutes, too long to hold
// back readiness, and until it is done OLD still opens what it has not reached.

// KeyedSealer is a ServerSealer that tells which key seals (the first of FUNNEL_SECRET_KEY):
// infra/sealing.Sealer.
type KeyedSealer interface {
	ServerSealer
	KeyIDs() []string
}

// resealBatch bounds the keys one batch of ResealPersonKeys reads and seals again, and so what it
// holds in memory and how many rows its update writes at once: about 3 ms of sealing a batch.
const resealBatch = 500

// Resealed is what ResealPersonKeys did: Resealed keys sealed again with the first key, and
// Unopened keys that no configured key opens (sealed with a key dropped before they were sealed
// again, or lost): those stay as they are, and their persons' events cannot be read until that
// key is configured again (docs/architecture.md, "A missing key").
type Resealed struct {
	Resealed, Unopened int
}

// afterResealRead, when set (tests), runs after each batch of ResealPersonKeys read its keys and
// before it writes them: where an erasure would race it.
var afterResealRead func()

// ResealPersonKeys seals again with server's first key every person key sealed with another of
// its keys, until a pass over the table finds none it can open (so that keys a process still
// sealing with OLD stored behind the pass are caught by the next). It is idempotent, and cheap
// when there is nothing to do: one scan of the table.
//
// Safe beside other processes and erasures: each batch replaces only a row still as it was read
// (resealBatchAfter), so a key an erasure destroyed (NULL) is never written back, and processes
// that seal again at once (every worker of a deployment starts it) only repeat each other's work.
func ResealPersonKeys(ctx context.Context, db *sqldb.DB, server KeyedSealer) (Resealed, error) {
	current := "v1." + server.KeyIDs()[0] + ".%"
	var total Resealed
	for {
		pass, found, err := resealPass(ctx, db, server, current)
		total.Resealed += pass.Resealed
		total.Unopened = pass.Unopened
		if err != nil {
			return total, err
		}
		if found > 0 {
			continue
		}
		// A pass that found nothing may have been passed by keys a process still sealing with
		// another key stored behind it: done only once no key is left under another key but
		// those no key opens.
		left, err := keysUnderAnotherKey(ctx, db, current)
		if err != nil || left <= pass.Unopened {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(resealRetry):
		}
	}
}

// resealRetry is how long ResealPersonKeys waits before another pass over keys stored behind the
// last one.
const resealRetry = 200 * time.Millisecond

// keysUnderAnotherKey counts the persons' keys sealed with another key than current, without
// passing over any row.
func keysUnderAnotherKey(ctx context.Context, db *sqldb.DB, current string) (int, error) {
	var n int
	if err := db.Read.QueryRowContext(ctx, `SELECT count(*) FROM person_key_rows WHERE sealed_key IS NOT NULL AND sealed_key NOT LIKE $1`, current).Scan(&n); err != nil {
		return 0, fmt.Errorf("eventstore: count the persons' keys left to seal again: %w", err)
	}
	return n, nil
}

// resealPass goes over person_key_rows once, a batch at a time, in their order (the positions of
// their contacts' first events); found counts the
// keys it could open and meant to seal again (sealed by now with the first key, by it or by
// another process, or erased).
func resealPass(ctx context.Context, db *sqldb.DB, server KeyedSealer, current string) (done Resealed, found int, err error) {
	var after int64
	for {
		batch, err := resealBatchAfter(ctx, db, server, current, after)
		done.Resealed += batch.resealed
		done.Unopened += batch.unopened
		found += batch.found
		if err != nil || batch.last == 0 {
			return done, found, err
		}
		after = batch.last
	}
}

// resealedBatch is what one batch did; last is the greatest first_position it read (0: the table
// holds no more keys to seal again after the batch's start).
type resealedBatch struct {
	last                      int64
	found, resealed, unopened int
}

// resealBatchAfter seals again the first resealBatch keys after the position after that are
// sealed with another key than the first. It reads them outside any write transaction: on SQLite
// a write transaction holds the one writer, every append waits for it, and the pass that finds
// nothing left reads the whole table. It then replaces, in one statement, only the rows still as
// it read them (a compare-and-set): a key an erasure destroyed meanwhile (NULL) is never written
// back, and a key another process sealed again first stays as that process sealed it. On
// PostgreSQL it passes over the rows another transaction holds (an erasure's, another
// process's), which the next pass reads again.
func resealBatchAfter(ctx context.Context, db *sqldb.DB, server KeyedSealer, current string, after int64) (resealedBatch, error) {
	var b resealedBatch
	rows, err := db.Read.QueryContext(ctx, `SELECT first_position, contact_id, sealed_key FROM person_key_rows
		WHERE first_position > $1 AND sealed_key IS NOT NULL AND sealed_key NOT LIKE $2
		ORDER BY first_position LIMIT `+fmt.Sprint(resealBatch), after, current)
	if err != nil {
		return b, fmt.Errorf("eventstore: read persons' keys to seal again: %w", err)
	}
	var values []string
	var args []any
	var positions []int64
	for rows.Next() {
		var position int64
		var id, sealed string
		if err := rows.Scan(&position, &id, &sealed); err != nil {
			rows.Close()
			return b, fmt.Errorf("eventstore: read persons' keys to seal again: %w", err)
		}
		b.last = position
		key, err := server.Open(sealed, personKeyData(id))
		if err != nil {
			b.unopened++
			continue
		}
		again, err := server.Seal(key, personKeyData(id))
		if err != nil {
			rows.Close()
			return b, fmt.Errorf("eventstore: seal the key of %s again: %w", id, err)
		}
		b.found++
		row := sqldb.Placeholders(db.Dialect, len(args)+1, 3)
		if db.Dialect == sqldb.Postgres {
			// A parameter in VALUES is text unless told: the position is compared with a bigint.
			row = fmt.Sprintf("$%d::bigint, $%d, $%d", len(args)+1, len(args)+2, len(args)+3)
		}
		values = append(values, "("+row+")")
		args = append(args, position, sealed, again)
		positions = append(positions, position)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return b, fmt.Errorf("eventstore: read persons' keys to seal again: %w", err)
	}
	if afterResealRead != nil {
		afterResealRead()
	}
	if len(values) == 0 {
		return b, nil
	}
	update := `UPDATE person_key_rows SET sealed_key = v.column3
		FROM (VALUES ` + strings.Join(values, ", ") + `) AS v
		WHERE person_key_rows.first_position = v.column1 AND person_key_rows.sealed_key = v.column2`
	if db.Dialect == sqldb.Postgres {
		// Only the rows no other transaction holds: waiting for an erasing append, which locks
		// its persons' rows in its own order, could deadlock with it. A row passed over is
		// left for the next pass.
		update = `WITH held AS (SELECT first_position FROM person_key_rows WHERE first_position = ANY($` + fmt.Sprint(len(args)+1) + `::bigint[]) FOR UPDATE SKIP LOCKED) ` +
			update + ` AND person_key_rows.first_position IN (SELECT first_position FROM held)`
		args = append(args, positions)
	}
	res, err := db.Write.ExecContext(ctx, update, args...)
	if err != nil {
		return b, fmt.Errorf("eventstore: seal persons' keys again: %w", err)
	}
	n, _ := res.RowsAffected()
	b.resealed = int(n)
	return b, nil
}
