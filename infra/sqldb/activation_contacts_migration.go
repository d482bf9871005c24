package sqldb

import (
	"github.com/pressly/goose/v3"
)

// activationContactsMigration is migration 24: the contact of every activation written before
// migration 16 gave the read model its contact_id column. An erasure blanks the buyer's email and
// user id in the activations of its contact by that column (projections/activations.go), so a row
// left NULL kept them after its buyer's erasure; migration 16 left that to a rebuild nobody was
// told to run. The contact is the one the row's own ActivationIssued names (its stream's first
// event, on the activation's id): every ActivationIssued has carried contactId since the first
// release, the projection fills the column from it, and it is an id, never sealed, so this
// finds exactly the contact the projection would have written. The activations of a contact
// erased before this migration are then blanked as its erasure would have blanked them, once,
// as migration 22 did for lead titles.
//
// Both statements are set-wise, inside the database: nothing is read into the process, whatever
// the table's size. Both are idempotent (the first touches only NULL rows, the second only rows
// still holding a value). In Go only because each database reads a member of JSON differently.
func activationContactsMigration(dialect Dialect) *goose.Migration {
	erased := `SELECT contact_id FROM person_keys WHERE sealed_key IS NULL`
	up := []string{
		`UPDATE activations SET contact_id = (
		    SELECT NULLIF(` + jsonText(dialect, "contactId") + `, '') FROM events issued
		     WHERE issued.stream_id = activations.id AND issued.version = 1 AND issued.type = 'ActivationIssued')
		  WHERE contact_id IS NULL`,
		`UPDATE activations SET email = '', external_user_id = ''
		  WHERE (email <> '' OR external_user_id <> '') AND contact_id IN (` + erased + `)`,
	}
	if dialect == Postgres {
		// The first update reads every activation: let the planner scan the table, which funnel's
		// sessions otherwise refuse where an index applies (db.go, openPostgres).
		up = append([]string{`SET LOCAL enable_seqscan = on`}, up...)
	}
	// Down keeps the contacts: they are what the projection writes today.
	m := goose.NewGoMigration(24, &goose.GoFunc{RunTx: run(up)}, &goose.GoFunc{RunTx: run(nil)})
	m.Source = "00024_activation_contacts.go" // how `migrate` names it
	return m
}
