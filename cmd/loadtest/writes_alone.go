package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// The writes alone bound the upserts' ratio to pgbench from above: PostgreSQL runs, from pgbench
// and with no service at all, the statements the service sends for upserts of new emails with two
// tags. Whatever the service spends besides (HTTP, JSON, the key's check, sealing, the command)
// shares the same cores and can only lower the rate. The statements are those of one append
// (infra/eventstore/append_tx.go, erasure_race.go, personal_data.go, the position taken by
// event_log_take) and of the inline contacts projection (projections/contacts.go), in one
// pipeline as the service sends them, with the values of a real upsert's (a sealed ContactCreated
// and two TagApplied events). They are sent prepared, which costs PostgreSQL less than the one-row
// insert's simple protocol: the bound is generous to the service. The group's positions are taken
// once, as the appender takes them; but each upsert sends its own statements, where the appender
// folds a group's rows into one statement per table (a script of folded statements measured no
// faster here).

// The writes alone are measured from each number of sessions with each number of upserts a
// transaction, and the best rate is the bound: the service may open as few sessions and group as
// many upserts as it likes (it has two appenders a process, and groups what waits), but it must
// send these statements. More sessions than cores only queue on PostgreSQL's locks (at 32, the
// rate fell by half).
var (
	writesAloneSessions   = []int{2, 4, 8}
	upsertsPerTransaction = []int{1, 4, 16}
)

// writesAlone measures the upserts' writes alone from each of writesAloneSessions in groups of
// each of upsertsPerTransaction on a fresh database migrated by the binary, and prints each rate
// with its ratio to the one-row insert at 8 clients and the machine's CPU time per upsert. It
// returns the best, as a ratio to the one-row insert at 8 and at 32 clients.
func writesAlone(bin, pgURL, dir string, baseline map[int]pgbenchRun, d time.Duration) []result {
	pgbenchBin := pgbenchPath()
	if pgbenchBin == "" {
		return nil
	}
	url, drop := postgresDatabase(pgURL, "funnel_writes_alone")
	defer drop()
	migrate := exec.Command(bin, "migrate")
	migrate.Env = append(os.Environ(), "FUNNEL_DATABASE_URL="+url, "FUNNEL_SECRET_KEY="+runKey(), "FUNNEL_LOG_LEVEL=warn")
	migrate.Stderr = os.Stderr
	check(migrate.Run())
	fmt.Printf("== PostgreSQL alone: the writes of upserts (a new email, two tags), no service, %s each\n", d)
	var best pgbenchRun
	var bestName string
	for _, sessions := range writesAloneSessions {
		for _, group := range upsertsPerTransaction {
			script := filepath.Join(dir, fmt.Sprintf("upserts_%d.sql", group))
			check(os.WriteFile(script, []byte(upsertWritesScript(group)), 0o600))
			// The service's own session settings (sqldb.Open): without statistics (autovacuum
			// may be off) PostgreSQL would read the growing log by a scan.
			run, err := runPgbench(pgbenchBin, url, script, "prepared", "-c enable_seqscan=off -c jit=off", sessions, d, group)
			name := fmt.Sprintf("%d sessions, %d upsert(s) a transaction", sessions, group)
			if err != nil {
				fmt.Printf("%s: %v\n", name, err)
				continue
			}
			line := fmt.Sprintf("%s: %.0f upserts/s", name, run.tps)
			if base := baseline[8]; base.tps > 0 {
				line += fmt.Sprintf(" (%.2f× pgbench at 8 clients)", run.tps/base.tps)
			}
			fmt.Println(line)
			if run.cpu != nil {
				fmt.Printf("  %s\n", run.cpu)
			}
			if run.tps > best.tps {
				best, bestName = run, name
			}
		}
	}
	if best.tps == 0 {
		return nil
	}
	if base := baseline[8]; best.cpu != nil && base.cpu != nil && base.cpu.perRequest > 0 {
		fmt.Printf("the best, %s: CPU per upsert %.1f× a one-row insert's at 8 clients\n", bestName, float64(best.cpu.perRequest)/float64(base.cpu.perRequest))
	}
	var results []result
	for _, clients := range []int{8, 32} {
		results = append(results, result{name: fmt.Sprintf("postgres alone, the upserts' writes at their best (%s), against %d clients", bestName, clients),
			value: best.tps, unit: "/s", clients: clients, target: "-", cpu: best.cpu})
	}
	return results
}

// upsertWritesScript is the pgbench script of one transaction holding the writes of group upserts
// of new emails with two tags, each under a contact id of its own.
func upsertWritesScript(group int) string {
	var b strings.Builder
	for k := range group {
		fmt.Fprintf(&b, "\\set n%d random(1, 1000000000000000)\n", k) // wide: the ids of all the runs on one database must not meet
	}
	b.WriteString("\\startpipeline\nBEGIN;\n")
	fmt.Fprintf(&b, "SELECT pg_advisory_xact_lock_shared(%d);\n", sqldb.InlineLock)
	// The group's positions, taken once as the appender takes them, kept for the transaction (a
	// pipeline cannot hand a result to a later statement).
	fmt.Fprintf(&b, "SELECT set_config('funnel.first', (SELECT first_position FROM event_log_take(%d))::text, true);\n", 3*group)
	for k := range group {
		id := fmt.Sprintf("('ct_' || :client_id::text || '_' || :n%d::text)", k)
		ids := "ARRAY[" + id + "]::text[]"
		fmt.Fprintf(&b, "SELECT pg_advisory_xact_lock_shared(%d, h) FROM (SELECT DISTINCT hashtext(id) & 63 AS h FROM unnest(%s) AS id ORDER BY h) AS k;\n", personLock, ids)
		fmt.Fprintf(&b, "SELECT contact_id FROM person_keys WHERE sealed_key IS NULL AND contact_id = ANY(%s);\n", ids)
		fmt.Fprintf(&b, "SELECT id, COALESCE((SELECT version FROM events WHERE stream_id = id ORDER BY version DESC LIMIT 1), 0) FROM unnest(%s) AS id;\n", ids)
		fmt.Fprintf(&b, "INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata, idempotency_id) "+
			"SELECT current_setting('funnel.first')::bigint + %d + v - 1, gen_random_uuid()::text, %s, v, CASE v WHEN 1 THEN 'ContactCreated' ELSE 'TagApplied' END, 1, 1795848021999, '%s', NULL, NULL, "+
			"CASE v WHEN 1 THEN %s ELSE %s END, %s, NULL FROM generate_series(1, 3) AS v;\n",
			3*k, id, loadAccount, pgbenchText(contactCreatedData), pgbenchText(tagAppliedData), pgbenchText(eventMetadata))
		fmt.Fprintf(&b, "INSERT INTO person_key_rows (first_position, contact_id, account_id, sealed_key) VALUES ((SELECT position FROM events WHERE stream_id = %[1]s AND version = 1), %[1]s, '%[2]s', '%[3]s');\n", id, loadAccount, sealedPersonKey)
		fmt.Fprintf(&b, "INSERT INTO contacts (id, account_id, email, email_key, first_name, last_name, phone, tag_ids, custom_fields, created_at, updated_at, seq, document) "+
			"VALUES (%[1]s, '%[2]s', %[1]s || '@example.com', %[1]s || '@example.com', 'Load', '', '', %[3]s, '{}', 1795848021999, 1795848021999, :n%[4]d::bigint, %[5]s) "+
			"ON CONFLICT (id) DO UPDATE SET first_name = excluded.first_name, last_name = excluded.last_name, phone = excluded.phone, tag_ids = excluded.tag_ids, "+
			"custom_fields = excluded.custom_fields, updated_at = excluded.updated_at, document = excluded.document;\n",
			id, loadAccount, pgbenchText(contactTagIDs), k, pgbenchText(contactDocument))
	}
	b.WriteString("COMMIT;\n\\endpipeline\n")
	return b.String()
}

// pgbenchText is s as an SQL string literal pgbench leaves alone: pgbench reads every ":name" of
// a script as a variable, quoted or not, so each colon is written as an escape.
func pgbenchText(s string) string {
	return "E'" + strings.ReplaceAll(strings.ReplaceAll(s, "'", "''"), ":", `\x3a`) + "'"
}

// personLock is the first key of the persons' advisory locks (infra/eventstore/erasure_race.go).
const personLock = 0x70657273

// The values of one real upsert, as the service stored them (its ContactCreated sealed).
const (
	loadAccount        = "acc_pxd6faw3vr44qm6j4l6x6zocam"
	sealedPersonKey    = "v1.7526ce34.cSuwC1JDgxF7KiL68uu8PVJzqHD1n6UGDr6Ki2UBer8deok3841pr9RqQkwg-xglG-hDP_eoBljMKrkCb8jUDqT22BGA9-Is"
	contactCreatedData = `{"$personal":{"contactId":"ct_llzyclhq3hkwzzdvrqomd47ho4","sealed":"v1.ab35575e.-fUg2WKitj491c9b_3rDbsv_tClOmW84t4OAS_WmnZpjyNsdqdwGxJdmvxUVMd92Z1R2lOIWFGOt1BkUQBJvplzh1zTarlEXD1f7VPbv_L-g54qFj2mmFGRPnTQ0PZjVEmUZITKMd4cIYzcmT_5taao"},"contactId":"ct_llzyclhq3hkwzzdvrqomd47ho4","accountId":"acc_pxd6faw3vr44qm6j4l6x6zocam","email":null,"firstName":null,"lastName":null,"phone":null,"customFields":null}`
	tagAppliedData     = `{"contactId":"ct_llzyclhq3hkwzzdvrqomd47ho4","tagId":"tag_ij5tc43tkn6dqn5k4d62m474ru","tagName":"Newsletter"}`
	eventMetadata      = `{"accountId":"acc_pxd6faw3vr44qm6j4l6x6zocam","actor":"key:key_6c3hlcyhn6c7urhjwu3n4vm6ai","requestId":"req_9905dc7bbd485a90477a8ab8","causationId":"req_9905dc7bbd485a90477a8ab8","correlationId":"req_9905dc7bbd485a90477a8ab8"}`
	contactTagIDs      = `["tag_ifjjexk2ekq7tz3ag4zaknbobm","tag_ij5tc43tkn6dqn5k4d62m474ru"]`
	contactDocument    = `{"createdAt":"2026-11-28T06:40:21.999Z","customFields":{},"email":"load@example.com","firstName":"Load","id":"ct_llzyclhq3hkwzzdvrqomd47ho4","lastName":"","phone":"","tagIds":["tag_ifjjexk2ekq7tz3ag4zaknbobm","tag_ij5tc43tkn6dqn5k4d62m474ru"],"updatedAt":"2026-11-28T06:40:21.999Z"}`
)
