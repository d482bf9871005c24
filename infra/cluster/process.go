package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// Process is one live serve process as GET /admin/v1/cluster shows it.
type Process struct {
	ID         string
	Role       Role
	Host       string
	PID        int
	StartedAt  time.Time
	LastSeenAt time.Time
	// Runs names the work the process runs now: a name per projection, "webhooks" (the webhook
	// projector), "dispatcher", "timers", ...
	Runs []string
}

// Listed is how long after its last heartbeat a process is still listed.
const Listed = 10 * time.Second

// newProcessID names a process uniquely in the cluster: several services may run in one OS
// process (tests), and a pid is reused.
func newProcessID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// nowMillis is the database's clock in milliseconds (sqldb.Dialect.NowMillis): leases expire by
// one clock whatever the hosts' clocks say.
func nowMillis(d sqldb.Dialect) string { return d.NowMillis() }

// List returns the processes seen within Listed, oldest first.
func List(ctx context.Context, db *sqldb.DB) ([]Process, error) {
	rows, err := db.Read.QueryContext(ctx, `SELECT id, role, host, pid, started_at, last_seen_at, runs FROM cluster_processes
		WHERE last_seen_at > `+nowMillis(db.Dialect)+` - $1 ORDER BY started_at, id`, Listed.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("cluster: list processes: %w", err)
	}
	defer rows.Close()
	out := []Process{}
	for rows.Next() {
		var p Process
		var started, seen int64
		var runs string
		if err := rows.Scan(&p.ID, &p.Role, &p.Host, &p.PID, &started, &seen, &runs); err != nil {
			return nil, fmt.Errorf("cluster: list processes: %w", err)
		}
		p.StartedAt, p.LastSeenAt = time.UnixMilli(started).UTC(), time.UnixMilli(seen).UTC()
		p.Runs = splitRuns(runs)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: list processes: %w", err)
	}
	return out, nil
}

func splitRuns(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

func joinRuns(names []string) string {
	names = slices.Clone(names)
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ",")
}
