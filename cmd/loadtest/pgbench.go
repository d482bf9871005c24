package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// pgbenchScript is the baseline every result is compared with: one row inserted into an indexed
// table per transaction, the least a durable write into PostgreSQL costs on this machine.
const pgbenchScript = "INSERT INTO one_row (email, created_at) VALUES ('load@example.com', 1);\n"

// pgbenchPath finds pgbench, which ships with PostgreSQL's client package: on PATH, or where
// Debian's packages put it.
func pgbenchPath() string {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(matches) > 0 {
		return matches[len(matches)-1]
	}
	return ""
}

var (
	tpsLine          = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	transactionsLine = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

// pgbenchRun is what one pgbench run measured: its inserts per second and, where /proc tells,
// the machine's CPU time per insert (pgbench's and PostgreSQL's).
type pgbenchRun struct {
	tps float64
	cpu *cpuUse
}

// pgbench measures one-row inserts per second at each number of clients on a fresh database of
// the PostgreSQL server, with the same duration as the other phases. It returns nothing when
// pgbench is missing or fails: the results are then shown without ratios.
func pgbench(pgURL, dir string, clients []int, d time.Duration) map[int]pgbenchRun {
	bin := pgbenchPath()
	if bin == "" {
		fmt.Println("pgbench not found (PostgreSQL's client package): results without ratios")
		return nil
	}
	url, drop := postgresDatabase(pgURL, "funnel_pgbench")
	defer drop()
	db, err := sql.Open("pgx", url)
	check(err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE one_row (id BIGSERIAL PRIMARY KEY, email TEXT NOT NULL, created_at BIGINT NOT NULL)`)
	check(err)
	script := filepath.Join(dir, "one_row.sql")
	check(os.WriteFile(script, []byte(pgbenchScript), 0o600))
	out := map[int]pgbenchRun{}
	for _, c := range clients {
		run, err := runPgbench(bin, url, script, "simple", "", c, d, 1)
		if err != nil {
			fmt.Printf("pgbench at %d clients: %v\n", c, err)
			continue
		}
		fmt.Printf("pgbench one-row insert, %d clients: %.0f/s\n", c, run.tps)
		if run.cpu != nil {
			fmt.Printf("  %s\n", run.cpu)
		}
		out[c] = run
	}
	return out
}

// runPgbench runs script from the given number of clients for d on the database of url, with
// pgbench's query mode (simple, extended or prepared) and the session settings of options
// (PGOPTIONS). Each transaction of the script counts as perTransaction writes: the rate and the
// CPU time are per write.
func runPgbench(bin, url, script, mode, options string, clients int, d time.Duration, perTransaction int) (pgbenchRun, error) {
	cmd := exec.Command(bin, "-n", "-M", mode, "-c", strconv.Itoa(clients), "-j", "2", "-T", strconv.Itoa(max(1, int(d.Seconds()))), "-f", script, url)
	cmd.Env = append(os.Environ(), "PGOPTIONS="+options)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cpuUsed := measureCPU(0)
	if err := cmd.Run(); err != nil {
		return pgbenchRun{}, fmt.Errorf("%v\n%s", err, strings.TrimSpace(stderr.String()))
	}
	// pgbench reports failed transactions in its output, not in its exit status.
	if strings.Contains(stderr.String(), "error") {
		return pgbenchRun{}, fmt.Errorf("%s", strings.TrimSpace(stderr.String()))
	}
	m := tpsLine.FindStringSubmatch(stdout.String())
	if m == nil {
		return pgbenchRun{}, fmt.Errorf("no tps in its output\n%s", stdout.String())
	}
	run := pgbenchRun{}
	tps, _ := strconv.ParseFloat(m[1], 64)
	run.tps = tps * float64(perTransaction)
	if n := transactionsLine.FindStringSubmatch(stdout.String()); n != nil {
		transactions, _ := strconv.Atoi(n[1])
		if use, ok := cpuUsed(transactions * perTransaction); ok {
			run.cpu = &use
		}
	}
	return run, nil
}
