package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// Lease timing. A holder renews its leases every renewEvery; a lease it has not renewed for
// leaseTTL is free for another worker, which looks every balanceEvery: a worker that dies loses
// its work to another within leaseTTL + balanceEvery (about 5.5 s, below the 10 s of
// operator-api.md). A holder that could not renew for leaseTTL - renewEvery stops the work
// itself, before another may take it over.
const (
	leaseTTL     = 5 * time.Second
	renewEvery   = time.Second
	balanceEvery = 500 * time.Millisecond
)

// Hold is the work a process runs, told which leases it holds now. It returns once the work of
// leases no longer held has stopped (their checkpoints saved), so that a lease is released only
// after its work stopped here.
type Hold func(ctx context.Context, held []string)

// Observer is told what the process holds (metrics).
type Observer interface {
	LeasesHeld(names []string)
	TookOver(name string)
}

// Config is what a Node needs.
type Config struct {
	Role Role
	// Leased names the work that must run on one process at a time; a process of a role that
	// does no work (api) takes none of it.
	Leased []string
	// Always names the work this process runs whatever it holds (the webhook dispatcher, which
	// any worker runs): shown in the cluster view.
	Always   []string
	Hold     Hold
	Observer Observer
	Log      *zap.Logger
}

// Node is this process in the cluster: its heartbeat and its leases.
type Node struct {
	db  *sqldb.DB
	cfg Config
	id  string
	pid int

	mu      sync.Mutex
	owned   map[string]bool // lease rows this process holds in the database
	running []string        // what Hold was last told
	renewed time.Time       // last successful renewal
	lost    chan struct{}   // a renewal found leases gone
}

// New prepares this process's place in the cluster; Run it.
func New(db *sqldb.DB, cfg Config) *Node {
	if !cfg.Role.Works() {
		cfg.Leased, cfg.Always = nil, nil
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return &Node{db: db, cfg: cfg, id: newProcessID(), pid: os.Getpid(), owned: map[string]bool{}, lost: make(chan struct{}, 1)}
}

// ID is this process's id in the cluster view.
func (n *Node) ID() string { return n.id }

// Run keeps the heartbeat and the leases until ctx ends, then hands the work over at once: it
// stops the work (Hold with nothing), deletes its leases, so that another worker takes each
// within a second, and removes its heartbeat.
func (n *Node) Run(ctx context.Context) error {
	if err := n.beat(ctx); err != nil && ctx.Err() == nil {
		// The database may be away for a moment: the heartbeat and the leases are retried every
		// second, and a process holds no work until they succeed.
		n.cfg.Log.Warn("cluster: first heartbeat", zap.Error(err))
	}
	defer n.leave()
	if n.db.Dialect != sqldb.Postgres {
		// SQLite: this process is the only one (sqldb.DB.Claim); it holds everything.
		n.setRunning(ctx, slices.Clone(n.cfg.Leased))
		n.beatUntil(ctx)
		return nil
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); n.beatUntil(ctx) }()
	n.balanceUntil(ctx)
	wg.Wait()
	return nil
}

// leave hands everything over: the work stops, then the leases and the heartbeat go.
func (n *Node) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.setRunning(ctx, nil)
	if n.db.Dialect == sqldb.Postgres {
		if _, err := n.db.Write.ExecContext(ctx, `DELETE FROM leases WHERE holder = $1`, n.id); err != nil {
			n.cfg.Log.Warn("cluster: hand the leases over (they expire instead)", zap.Error(err))
		}
	}
	if _, err := n.db.Write.ExecContext(ctx, `DELETE FROM cluster_processes WHERE id = $1`, n.id); err != nil {
		n.cfg.Log.Warn("cluster: leave the cluster view (it ages out)", zap.Error(err))
	}
	n.cfg.Log.Info("cluster: work handed over")
}

// beatUntil renews the heartbeat and the leases every renewEvery until ctx ends.
func (n *Node) beatUntil(ctx context.Context) {
	t := time.NewTicker(renewEvery)
	defer t.Stop()
	for beats := 1; ; beats++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := n.beat(ctx); err != nil && ctx.Err() == nil {
			n.cfg.Log.Warn("cluster: heartbeat", zap.Error(err))
		}
		if beats%forgetEvery == 0 {
			n.forgetTheGone(ctx)
		}
		if n.db.Dialect == sqldb.Postgres {
			n.renew(ctx)
		}
	}
}

// forgetEvery is how many heartbeats pass between two deletions of the rows of processes gone
// for longer than forgetAfter (killed, so they never left): the table stays the size of the
// cluster.
const (
	forgetEvery = 60
	forgetAfter = time.Hour
)

func (n *Node) forgetTheGone(ctx context.Context) {
	if _, err := n.db.Write.ExecContext(ctx, `DELETE FROM cluster_processes WHERE last_seen_at < `+nowMillis(n.db.Dialect)+` - $1`,
		forgetAfter.Milliseconds()); err != nil && ctx.Err() == nil {
		n.cfg.Log.Warn("cluster: forget processes gone long ago", zap.Error(err))
	}
}

// beat records that this process is alive, with what it runs now.
func (n *Node) beat(ctx context.Context) error {
	n.mu.Lock()
	runs := joinRuns(append(slices.Clone(n.running), n.cfg.Always...))
	n.mu.Unlock()
	now := nowMillis(n.db.Dialect)
	_, err := n.db.Write.ExecContext(ctx, `INSERT INTO cluster_processes (id, role, host, pid, started_at, last_seen_at, runs)
		VALUES ($1, $2, $3, $4, `+now+`, `+now+`, $5)
		ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at, runs = excluded.runs`,
		n.id, string(n.cfg.Role), hostname(), n.pid, runs)
	if err != nil {
		return fmt.Errorf("cluster: heartbeat: %w", err)
	}
	return nil
}

// renew extends every lease this process holds. One it no longer holds (another worker took it
// over while this process could not renew: hung, or cut off) is dropped, and so is everything
// once renewals have failed for nearly a lease's lifetime: the balancer then stops that work.
func (n *Node) renew(ctx context.Context) {
	n.mu.Lock()
	before := copySet(n.owned)
	n.mu.Unlock()
	if len(before) == 0 {
		n.mu.Lock()
		n.renewed = time.Now()
		n.mu.Unlock()
		return
	}
	rows, err := n.db.Write.QueryContext(ctx, `UPDATE leases SET expires_at = `+nowMillis(n.db.Dialect)+` + $1 WHERE holder = $2 RETURNING name`,
		leaseTTL.Milliseconds(), n.id)
	var kept []string
	if err == nil {
		for rows.Next() {
			var name string
			if err = rows.Scan(&name); err != nil {
				break
			}
			kept = append(kept, name)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		n.cfg.Log.Warn("cluster: renew leases", zap.Error(err))
		if time.Since(n.renewed) < leaseTTL-renewEvery {
			return
		}
		kept = nil
	} else {
		n.renewed = time.Now()
	}
	dropped := false
	for name := range before {
		if !slices.Contains(kept, name) && n.owned[name] {
			delete(n.owned, name)
			dropped = true
			n.cfg.Log.Warn("cluster: lost a lease", zap.String("lease", name))
		}
	}
	if dropped {
		select {
		case n.lost <- struct{}{}:
		default:
		}
	}
}

func copySet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// balanceUntil takes, releases and runs leases until ctx ends: every balanceEvery, and at once
// when a renewal lost some.
func (n *Node) balanceUntil(ctx context.Context) {
	n.mu.Lock()
	n.renewed = time.Now()
	n.mu.Unlock()
	t := time.NewTicker(balanceEvery)
	defer t.Stop()
	for {
		if err := n.balance(ctx); err != nil && ctx.Err() == nil {
			n.cfg.Log.Warn("cluster: balance leases", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.lost:
		}
	}
}

// expiredLongAgo is how long a lease may stay expired before any worker takes it whatever its
// share: the count of live workers may still include the one that died.
const expiredLongAgo = 2 * time.Second

// balance brings what this process holds to its share of the work: the leases over the live
// workers, rounded up. It takes free and expired leases while below its share, releases some
// (after their work stopped here) while above, and runs what it holds.
func (n *Node) balance(ctx context.Context) error {
	if len(n.cfg.Leased) == 0 {
		return nil
	}
	// Work whose lease was lost (taken over, or not renewed for too long) stops first, whatever
	// the database answers next.
	n.mu.Lock()
	var keep []string
	for _, name := range n.running {
		if n.owned[name] {
			keep = append(keep, name)
		}
	}
	lost := len(keep) != len(n.running)
	n.mu.Unlock()
	if lost {
		n.setRunning(ctx, keep)
	}
	now := nowMillis(n.db.Dialect)
	var workers int
	if err := n.db.Write.QueryRowContext(ctx, `SELECT COUNT(*) FROM cluster_processes WHERE role <> $1 AND last_seen_at > `+now+` - $2`,
		string(RoleAPI), leaseTTL.Milliseconds()).Scan(&workers); err != nil {
		return fmt.Errorf("cluster: count workers: %w", err)
	}
	share := (len(n.cfg.Leased) + max(workers, 1) - 1) / max(workers, 1)
	n.mu.Lock()
	owned := copySet(n.owned)
	n.mu.Unlock()

	if len(owned) < share || n.anyExpiredLongAgo(ctx) {
		leases, err := n.readLeases(ctx)
		if err != nil {
			return err
		}
		for _, name := range n.cfg.Leased {
			l, exists := leases[name]
			if owned[name] || (exists && l.expiredFor < 0) {
				continue
			}
			if len(owned) >= share && !(exists && l.expiredFor > expiredLongAgo) {
				continue
			}
			took, err := n.take(ctx, name)
			if err != nil {
				return err
			}
			if took {
				owned[name] = true
				n.mu.Lock()
				n.owned[name] = true
				n.mu.Unlock()
				if exists && l.holder != "" {
					n.cfg.Log.Info("cluster: took a lease over", zap.String("lease", name), zap.String("from", l.holder), zap.Duration("expiredFor", l.expiredFor))
					if n.cfg.Observer != nil {
						n.cfg.Observer.TookOver(name)
					}
				}
			}
		}
	}
	var release []string
	for _, name := range slices.Backward(n.cfg.Leased) {
		if len(owned)-len(release) <= share {
			break
		}
		if owned[name] {
			release = append(release, name)
		}
	}
	var run []string
	for _, name := range n.cfg.Leased {
		if owned[name] && !slices.Contains(release, name) {
			run = append(run, name)
		}
	}
	n.setRunning(ctx, run)
	for _, name := range release {
		n.mu.Lock()
		delete(n.owned, name)
		n.mu.Unlock()
		if _, err := n.db.Write.ExecContext(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, n.id); err != nil {
			return fmt.Errorf("cluster: release %s: %w", name, err)
		}
		n.cfg.Log.Info("cluster: released a lease to another worker", zap.String("lease", name), zap.Int("share", share))
	}
	return nil
}

// setRunning tells Hold what runs now, when that changed.
func (n *Node) setRunning(ctx context.Context, run []string) {
	n.mu.Lock()
	same := slices.Equal(run, n.running)
	n.mu.Unlock()
	if same {
		return
	}
	n.cfg.Hold(ctx, run)
	n.mu.Lock()
	n.running = run
	n.mu.Unlock()
	if n.cfg.Observer != nil {
		n.cfg.Observer.LeasesHeld(run)
	}
	n.cfg.Log.Info("cluster: runs", zap.Strings("leases", run))
	if ctx.Err() == nil {
		_ = n.beat(ctx) // the cluster view shows the change now, not at the next heartbeat
	}
}

type leaseRow struct {
	holder     string
	expiredFor time.Duration // negative: still held
}

func (n *Node) readLeases(ctx context.Context) (map[string]leaseRow, error) {
	rows, err := n.db.Write.QueryContext(ctx, `SELECT name, holder, `+nowMillis(n.db.Dialect)+` - expires_at FROM leases`)
	if err != nil {
		return nil, fmt.Errorf("cluster: read leases: %w", err)
	}
	defer rows.Close()
	out := map[string]leaseRow{}
	for rows.Next() {
		var name string
		var l leaseRow
		var ms int64
		if err := rows.Scan(&name, &l.holder, &ms); err != nil {
			return nil, fmt.Errorf("cluster: read leases: %w", err)
		}
		l.expiredFor = time.Duration(ms) * time.Millisecond
		if ms < 0 {
			l.expiredFor = -1
		}
		out[name] = l
	}
	return out, rows.Err()
}

// anyExpiredLongAgo tells whether some lease has gone unrenewed for longer than expiredLongAgo.
func (n *Node) anyExpiredLongAgo(ctx context.Context) bool {
	var any bool
	err := n.db.Write.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM leases WHERE expires_at < `+nowMillis(n.db.Dialect)+` - $1)`,
		expiredLongAgo.Milliseconds()).Scan(&any)
	return err == nil && any
}

// take claims a lease that is free (no row) or expired, and tells whether this process got it:
// another worker may have been quicker.
func (n *Node) take(ctx context.Context, name string) (bool, error) {
	now := nowMillis(n.db.Dialect)
	res, err := n.db.Write.ExecContext(ctx, `INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, `+now+` + $3)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE leases.expires_at < `+now,
		name, n.id, leaseTTL.Milliseconds())
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return false, err
		}
		return false, fmt.Errorf("cluster: take %s: %w", name, err)
	}
	got, _ := res.RowsAffected()
	return got == 1, nil
}
