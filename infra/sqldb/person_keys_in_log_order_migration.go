package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"
)

// personKeysInLogOrderVersion is the migration that stores the persons' keys in log order.
const personKeysInLogOrderVersion = 29

// personKeysInLogOrderMigration is migration 29: the persons' keys move from person_keys, keyed by
// contact id, to person_key_rows, keyed by the position of the contact's first event (its
// stream's version 1), and person_keys becomes a view that finds a contact's key through the
// log's own (stream_id, version) index. A contact id is a hash, so every new contact's key
// landed on a leaf of the old table's index of its own: on SQLite, 1.2 of the 10 pages an upsert
// writes to the WAL, the largest part of what sealing cost (docs/performance.md, "Where SQLite's
// cost lies"). Keyed by position, a group commit's new keys go to the table's last leaf together,
// and nothing else is indexed.
//
// Idempotent, as the migrations before it: applied again, it finds person_key_rows and does
// nothing. Breaking: older binaries insert into person_keys, which is a view now. A key whose contact has
// no first event cannot be found by the view: such a row is impossible (a key is made for a
// contact's own values, an erasure's row for a contact that exists), and the migration refuses to
// run rather than drop one.
func personKeysInLogOrderMigration(dialect Dialect) *goose.Migration {
	// On SQLite the position is the rowid (INTEGER PRIMARY KEY): the table is one tree, and a
	// row past the last goes to a leaf of its own without moving any other (SQLite balances a
	// table's tree so; an index's, or a WITHOUT ROWID table's, it rebalances with its neighbours,
	// which wrote three times the pages).
	position := `BIGINT NOT NULL PRIMARY KEY`
	if dialect == SQLite {
		position = `INTEGER PRIMARY KEY`
	}
	table := `CREATE TABLE person_key_rows (
	    first_position ` + position + `,
	    contact_id     TEXT   NOT NULL,
	    account_id     TEXT   NOT NULL,
	    sealed_key     TEXT,
	    erased_at      BIGINT
	)`
	var up []string
	if dialect == Postgres {
		// A process of an earlier release still running would write to person_keys after the
		// copy read it, and DROP TABLE would take that write with it (an erasure lost: the key
		// copied live). So the migration first waits for every transaction that touched the
		// table, and holds it whole (ACCESS EXCLUSIVE, as the DROP would: a weaker lock, taken
		// between an older append's read of the table and its write, deadlocked with it at the
		// DROP); their later statements wait for the migration, then fail on the view. (On SQLite
		// the migration holds the one writer.) The copy reads each key's first event on the
		// stream index: its time follows the contacts, not the log.
		up = append(up, `LOCK TABLE person_keys IN ACCESS EXCLUSIVE MODE`)
	}
	up = append(up, table,
		`INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key, erased_at)
		 SELECT e.position, k.contact_id, k.account_id, k.sealed_key, k.erased_at
		   FROM person_keys k JOIN events e ON e.stream_id = k.contact_id AND e.version = 1`)
	after := []string{`DROP TABLE person_keys`, personKeysView}
	down := []string{
		`CREATE TABLE person_keys_restored (
		    contact_id TEXT   NOT NULL,
		    account_id TEXT   NOT NULL,
		    sealed_key TEXT,
		    erased_at  BIGINT,
		    CONSTRAINT person_keys_pkey PRIMARY KEY (contact_id)
		)`,
		`INSERT INTO person_keys_restored (contact_id, account_id, sealed_key, erased_at)
		 SELECT contact_id, account_id, sealed_key, erased_at FROM person_key_rows`,
		`DROP VIEW person_keys`,
		`DROP TABLE person_key_rows`,
		`ALTER TABLE person_keys_restored RENAME TO person_keys`,
	}
	upTx := func(ctx context.Context, tx *sql.Tx) error {
		// Applied again (its record lost, or undone by hand): the keys are where it put them.
		exists := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'person_key_rows'`
		if dialect == Postgres {
			exists = `SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'person_key_rows'`
		}
		var done int
		if err := tx.QueryRowContext(ctx, exists).Scan(&done); err != nil {
			return fmt.Errorf("sqldb: look for person_key_rows: %w", err)
		}
		if done > 0 {
			return nil
		}
		if err := run(up)(ctx, tx); err != nil {
			return err
		}
		var before, moved int64
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM person_keys), (SELECT COUNT(*) FROM person_key_rows)`).Scan(&before, &moved); err != nil {
			return fmt.Errorf("sqldb: count the persons' keys: %w", err)
		}
		if before != moved {
			return fmt.Errorf("sqldb: %d of the %d persons' keys name a contact whose first event is not in the log; nothing was changed", before-moved, before)
		}
		return run(after)(ctx, tx)
	}
	m := goose.NewGoMigration(personKeysInLogOrderVersion, &goose.GoFunc{RunTx: upTx}, &goose.GoFunc{RunTx: run(down)})
	m.Source = "00029_person_keys_in_log_order.go" // how `migrate` names it
	return m
}

// personKeysView is person_keys since migration 29: each row of person_key_rows as its contact
// (the stream whose first event it is keyed by) and its key. Filtered by contact_id, it reads
// the contact's first event on the log's (stream_id, version) index and then its key by
// position. The contact id is stored too and must agree: the view never pairs a key with a
// contact it was not made for.
const personKeysView = `CREATE VIEW person_keys AS
	SELECT e.stream_id AS contact_id, k.account_id, k.sealed_key, k.erased_at, k.first_position
	  FROM events e JOIN person_key_rows k ON k.first_position = e.position
	 WHERE e.version = 1 AND k.contact_id = e.stream_id`
