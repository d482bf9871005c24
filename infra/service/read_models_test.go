package service

import (
	"slices"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// notReadModels are the tables the migrations create that belong to no read model: the event
// log, the projections' checkpoints, the kept answers of Idempotency-Keys, the people's sealed
// keys (erasure), the processes' heartbeats and leases (infra/cluster), the progress of webhook
// replays (the requests' own state, like the kept answers), the order in which server keys first
// sealed (sealing_keys), and the migrations' own bookkeeping (goose_db_version,
// schema_compatibility). Every other table must be a read model's, in the registry.
var notReadModels = []string{"events", "event_log_head", "projection_checkpoints", "idempotency_keys", "person_keys", "person_key_rows", "cluster_processes", "leases", "webhook_replays", "sealing_keys", "goose_db_version", "schema_compatibility"}

// The registry lists every read-model table the migrations create, each once, and nothing the
// schema lacks: a migration that adds a read model's table without registering its read model
// fails here (and so the rebuild and restart comparisons, which read RebuildableTables, cannot
// miss it).
func TestTheRegistryHoldsEveryReadModelTableOfTheSchema(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		var registered []string
		for _, r := range newReadModels(db, nil, nil, nil, nil).registry() {
			if len(r.tables) == 0 {
				t.Errorf("%s lists no tables", r.projection.Name())
			}
			registered = append(registered, r.tables...)
		}
		for _, table := range registered {
			if n := countOf(registered, table); n > 1 {
				t.Errorf("%s is registered %d times", table, n)
			}
		}
		for _, table := range schemaTables(t, db) {
			if !slices.Contains(registered, table) && !slices.Contains(notReadModels, table) {
				t.Errorf("the schema's table %s belongs to no registered read model: register its read model (infra/service/read_models.go), or list it in notReadModels", table)
			}
		}
		schema := schemaTables(t, db)
		for _, table := range registered {
			if !slices.Contains(schema, table) {
				t.Errorf("the registry lists %s, which no migration creates", table)
			}
		}
	})
}

// The contacts and the leads (which tag automations open) are applied inline, in each append's
// transaction; every other read model is relayed.
func TestInlineAndRelayedSplitTheRegistry(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	m := newReadModels(db, nil, nil, nil, nil)
	var inline []string
	for _, p := range m.inline() {
		inline = append(inline, p.Name())
	}
	if !slices.Equal(inline, []string{"contacts", "leads"}) {
		t.Errorf("inline read models %v, want contacts and leads", inline)
	}
	if got, want := len(m.inline())+len(m.relayed()), len(m.registry()); got != want {
		t.Errorf("%d inline and relayed read models, %d registered", got, want)
	}
	for _, p := range m.relayed() {
		if slices.Contains(inline, p.Name()) {
			t.Errorf("%s is both inline and relayed", p.Name())
		}
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// schemaTables are the tables of a migrated database.
func schemaTables(t *testing.T, db *sqldb.DB) []string {
	t.Helper()
	query := `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	if db.Dialect == sqldb.SQLite {
		query = `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	}
	rows, err := db.Read.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
