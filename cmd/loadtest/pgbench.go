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
		cmd := exec.Command(bin, "-n", "-c", strconv.Itoa(c), "-j", "2", "-T", strconv.Itoa(max(1, int(d.Seconds()))), "-f", script, url)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cpuUsed := measureCPU(0)
		if err := cmd.Run(); err != nil {
			fmt.Printf("pgbench at %d clients failed: %v\n%s", c, err, strings.TrimSpace(stderr.String()))
			continue
		}
		m := tpsLine.FindStringSubmatch(stdout.String())
		if m == nil {
			fmt.Printf("pgbench at %d clients: no tps in its output\n%s", c, stdout.String())
			continue
		}
		run := pgbenchRun{}
		run.tps, _ = strconv.ParseFloat(m[1], 64)
		fmt.Printf("pgbench one-row insert, %d clients: %.0f/s\n", c, run.tps)
		if n := transactionsLine.FindStringSubmatch(stdout.String()); n != nil {
			inserts, _ := strconv.Atoi(n[1])
			if use, ok := cpuUsed(inserts); ok {
				run.cpu = &use
				fmt.Printf("  %s\n", use)
			}
		}
		out[c] = run
	}
	return out
}
