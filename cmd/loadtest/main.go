// Command loadtest is the load script of `make bench`: it builds funnel, runs it as a separate
// process on a fresh database of each storage mode, and drives it over loopback: upserts
// (POST /api/v1/contacts, a new email with two tagNames) from closed-loop clients, the contact
// list over 100k contacts, the projection lag at a fixed write rate, a rebuild of the contacts
// read model beside the serving process, and the service's peak RSS. It measures a one-row
// pgbench insert on the same PostgreSQL in the same run, and closes with a summary table of every
// result as a ratio to it, each against its target. Every phase is bounded in time; it only ever
// talks to 127.0.0.1.
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	modes := flag.String("db", "sqlite,postgres", "storage modes to measure")
	duration := flag.Duration("duration", 10*time.Second, "length of each phase")
	rate := flag.Int("rate", 1000, "writes per second of the lag phase")
	listContacts := flag.Int("contacts", 100_000, "contacts the list phase reads over (postgres)")
	goBench := flag.String("gobench", "", "output of `go test -bench` whose rates the summary shows as ratios too (make bench)")
	pgURL := flag.String("postgres", envOr("FUNNEL_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test"), "PostgreSQL server for the postgres mode and pgbench")
	phases := flag.String("phases", "alone,upsert,lag,list,rebuild", "the phases to run, of alone (PostgreSQL running the upserts' writes without the service), upsert, lag, list and rebuild (the list and the rebuild read what the earlier phases wrote)")
	scaling := flag.String("processes", "", "instead of the phases, the append ceiling with each of these numbers of API processes on one PostgreSQL, e.g. 1,2,4 (docs/scaling.md)")
	flag.Parse()

	dir, err := os.MkdirTemp("", "funnel-load-")
	check(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "funnel")
	build := exec.Command("go", "build", "-o", bin, "./cmd/funnel")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	check(build.Run())

	fmt.Printf("== pgbench, %s\n", *duration)
	baseline := pgbench(*pgURL, dir, []int{8, 32}, *duration)
	if *scaling != "" {
		var ks []int
		for _, k := range strings.Split(*scaling, ",") {
			var n int
			_, err := fmt.Sscan(k, &n)
			check(err)
			ks = append(ks, n)
		}
		appendCeiling(bin, *pgURL, ks, *duration)
		return
	}
	run := func(phase string) bool { return slices.Contains(strings.Split(*phases, ","), phase) }
	var results []result
	if run("alone") && slices.Contains(strings.Split(*modes, ","), "postgres") {
		results = append(results, writesAlone(bin, *pgURL, dir, baseline, *duration)...)
	}
	for _, mode := range strings.Split(*modes, ",") {
		dbURL, drop := database(mode, dir, *pgURL)
		fmt.Printf("== %s, %s a phase\n", mode, *duration)
		srv := startServer(bin, dbURL)
		account, key := setUp(srv)
		if run("upsert") {
			upserts(srv, key, mode, *duration, &results)
		}
		if run("lag") {
			lag(srv, account, key, *rate, *duration)
		}
		if run("list") || run("rebuild") {
			written := int(seq.Load())
			// On SQLite the log is seeded for the rebuild only: the list is measured on PostgreSQL.
			head := seedContacts(dbURL, account, written, *listContacts, mode == "postgres")
			if mode == "postgres" && run("list") {
				srv.waitRelayed(head)
				reads := list(srv, key, 8, *duration)
				results = append(results, result{name: fmt.Sprintf("postgres list of 50 over %dk contacts, 8 clients", max(written, *listContacts)/1000),
					value: reads.rate, unit: "/s", clients: 8, extra: fmt.Sprintf(" (p99 %s)", reads.p99), target: "≥ 4,000/s", cpu: reads.cpu,
					met: func(v, _ float64) bool { return v >= 4000 }})
			}
		}
		if run("rebuild") {
			rebuilt := rebuild(bin, dbURL, srv.secretKey)
			results = append(results, result{name: mode + " rebuild of contacts", value: rebuilt, unit: "events/s", clients: 8,
				target: "≥ 100,000 events/s", met: func(v, _ float64) bool { return v >= 100_000 }})
		}
		rss := srv.peakRSS()
		fmt.Printf("peak RSS of the service: %.1f MB\n", float64(rss)/1e6)
		results = append(results, result{name: mode + " peak RSS of the service", value: float64(rss) / 1e6, unit: "MB",
			target: "≤ 60 MB", met: func(v, _ float64) bool { return v > 0 && v <= 60 }})
		srv.stop()
		seq.Store(0)
		drop()
	}
	if *goBench != "" {
		results = append(goBenchRates(*goBench), results...)
	}
	printSummary(results, baseline)
}

// upserts measures upserts of new emails at 8 clients, and at 32 on PostgreSQL.
func upserts(srv *server, key, mode string, d time.Duration, results *[]result) {
	up8 := throughput(srv, key, 8, d)
	if mode == "postgres" {
		*results = append(*results, result{name: "postgres upsert, 8 clients", value: up8.rate, unit: "/s", clients: 8,
			extra: fmt.Sprintf(" (p99 %s)", up8.p99), target: "≥ 0.45× pgbench, p99 ≤ 10ms", cpu: up8.cpu,
			met: func(_, ratio float64) bool { return ratio >= 0.45 && up8.p99 <= 10*time.Millisecond }})
		up32 := throughput(srv, key, 32, d)
		*results = append(*results, result{name: "postgres upsert, 32 clients", value: up32.rate, unit: "/s", clients: 32,
			extra: fmt.Sprintf(" (p99 %s)", up32.p99), target: "≥ 0.6× pgbench", cpu: up32.cpu,
			met: func(_, ratio float64) bool { return ratio >= 0.6 }})
	} else {
		*results = append(*results, result{name: mode + " upsert, 8 clients", value: up8.rate, unit: "/s", clients: 8,
			extra: fmt.Sprintf(" (p99 %s)", up8.p99), target: "≥ 2,000/s", cpu: up8.cpu,
			met: func(v, _ float64) bool { return v >= 2000 }})
	}
}

func database(mode, dir, pgURL string) (string, func()) {
	switch mode {
	case "sqlite":
		return "sqlite:" + filepath.Join(dir, "load.db"), func() {}
	case "postgres":
		return postgresDatabase(pgURL, "funnel_load")
	}
	check(fmt.Errorf("unknown mode %q", mode))
	return "", nil
}

// postgresDatabase creates a fresh database on the server of pgURL, named after prefix, and
// returns its URL and what drops it.
func postgresDatabase(pgURL, prefix string) (string, func()) {
	// The same server and parameters (sslmode, say), another database.
	parsed, err := url.Parse(pgURL)
	check(err)
	admin, err := sql.Open("pgx", pgURL)
	check(err)
	name := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	_, err = admin.Exec("CREATE DATABASE " + name)
	check(err)
	parsed.Path = "/" + name
	return parsed.String(), func() {
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		admin.Close()
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		started.Range(func(s, _ any) bool {
			s.(*server).stop()
			return true
		})
		os.Exit(1)
	}
}
