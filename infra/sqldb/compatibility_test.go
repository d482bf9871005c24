package sqldb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A binary runs on a schema a newer release migrated when every migration past its own left the
// schema one it still runs on (the record a migrating binary writes, schema_compatibility), and
// refuses it, naming both versions, when one of them is a migration it must not run beside: an
// old process restarted during a rolling upgrade that only added an index comes back up, and
// one that would write what a newer release changed stays down.
func TestANewerSchemaIsRefusedOnlyPastABreakingMigration(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		var known, oldest int64
		if err := db.Read.QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&known); err != nil {
			t.Fatal(err)
		}
		if err := db.Read.QueryRow(`SELECT oldest_binary FROM schema_compatibility`).Scan(&oldest); err != nil {
			t.Fatalf("the compatibility record after migrating: %v", err)
		}
		if oldest != 16 {
			t.Errorf("the oldest binary recorded is %d, want 16 (the last breaking migration)", oldest)
		}
		// A newer release applied an additive migration.
		if _, err := db.Write.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, known+1); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate on a schema an additive migration advanced: %v", err)
		}
		if err := db.RequireCurrentSchema(ctx); err != nil {
			t.Fatalf("a schema an additive migration advanced: %v", err)
		}
		if err := db.Read.QueryRow(`SELECT oldest_binary FROM schema_compatibility`).Scan(&oldest); err != nil || oldest != 16 {
			t.Fatalf("the record after an older binary ran: %d, %v; want the newer release's, 16", oldest, err)
		}
		// Then a breaking one.
		if _, err := db.Write.Exec(`UPDATE schema_compatibility SET oldest_binary = $1`, known+1); err != nil {
			t.Fatal(err)
		}
		for name, check := range map[string]func(context.Context) error{
			"migrate":             func(ctx context.Context) error { _, err := db.Migrate(ctx); return err },
			"require the current": db.RequireCurrentSchema,
			"require a known one": db.RequireKnownSchema,
		} {
			err := check(ctx)
			if err == nil || !strings.Contains(err.Error(), "newer than this binary knows") || !strings.Contains(err.Error(), "run that release or a newer one") {
				t.Errorf("%s on a schema a breaking migration advanced: %v, want a refusal", name, err)
			}
		}
	})
}
