package sqldb

import (
	"github.com/pressly/goose/v3"
)

// erasedLeadTitlesMigration is migration 22: the lead titles of contacts erased before a title was
// a personal value. A lead's title defaults to its contact's email; since migration 22's release
// an erasure nulls the titles of the contact's lead events recorded in the clear and blanks its
// leads' titles in the read model (infra/eventstore/legacy_values.go, projections/leads.go), but
// a contact erased by an earlier release kept them. This does the same for those: in each plain
// LeadCreated or LeadUpdated naming an erased contact (person_keys: its key destroyed), the
// title becomes null, as DESIGN.md invariant 1 allows for an erased person's values, and nothing
// else of the event changes; the read model's titles become "". In Go only because each database
// spells the rewrite of one JSON member differently: PostgreSQL's replaces the member's text in
// place (its jsonb functions would reorder the event's members), SQLite's json_set keeps them in
// order.
func erasedLeadTitlesMigration(dialect Dialect) *goose.Migration {
	nullTitle := `json_set(data, '$.title', json('null'))`
	if dialect == Postgres {
		nullTitle = `regexp_replace(data, '"title":"([^"\\]|\\.)*"', '"title":null')`
	}
	erased := `SELECT contact_id FROM person_keys WHERE sealed_key IS NULL`
	up := []string{
		`UPDATE events SET data = ` + nullTitle + `
		  WHERE type IN ('LeadCreated', 'LeadUpdated') AND contact_id IN (` + erased + `)
		    AND data LIKE '%"title":"%' AND data NOT LIKE '%"$personal"%'`,
		`UPDATE leads SET title = '' WHERE title <> '' AND contact_id IN (` + erased + `)`,
	}
	m := goose.NewGoMigration(22, &goose.GoFunc{RunTx: run(up)}, &goose.GoFunc{RunTx: run(nil)})
	m.Source = "00022_erased_lead_titles.go" // how `migrate` names it
	return m
}
