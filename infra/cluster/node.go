package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
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
// operator-api.md).
//
// A holder that could not renew a lease stops its work itself before another may take it over,
// whatever the database does (refuses, or hangs: a partition): a watchdog that needs no database
// (Node.watch) stops the work of a lease stopMargin before the lease's expiry as this process can
// bound it. That bound is taken when the statement that set the expiry was sent, not when it
// returned: the database computed the expiry (its clock, plus leaseTTL) after that instant, so it
// cannot lie earlier. The work of a lease renewed last at t therefore starts stopping by t +
// leaseTTL - stopMargin + watchEvery (4.1 s), and has stopMargin - watchEvery (0.9 s) to stop
// before the lease expires at t' + leaseTTL >= t + leaseTTL; no other worker can take the lease
// before then.
//
// A renewal (and a take) may wait for its answer until that stop point, not a fixed callTimeout:
// a renewal that succeeds late still sets a valid bound (from its send time), and under load the
// wait includes one for a connection of the pool the API's requests share. Renewals run apart
// from the heartbeat, which does not eat their time. One is started every renewEvery while none
// is pending: against a database that refuses, a lease renewed last at t is tried again at about
// t + 1, 2 and 3 s; against one that hangs, the attempt of t + 1 s waits until the stop point and
// is the only one. The other statements of the node have a deadline of callTimeout.
const (
	leaseTTL     = 5 * time.Second
	renewEvery   = time.Second
	balanceEvery = 500 * time.Millisecond
	callTimeout  = time.Second
	stopMargin   = time.Second
	watchEvery   = 100 * time.Millisecond
)

// Hold is the work a process runs, told which leases it holds now. It returns once the work of
// leases no longer held has stopped (their checkpoints saved, within ctx's deadline if it has
// one), so that a lease is released only after its work stopped here.
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
	Always []string
	// Awaited names the leases whose work the requests of a process that does no work (api)
	// wait for: the relayed projections. Such a process looks, at every heartbeat, whether a
	// worker holds each (WorkersRun).
	Awaited  []string
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

	holdMu sync.Mutex // one change of what runs at a time: the balancer's, the watchdog's, leave's

	mu sync.Mutex
	// owned are the lease rows this process holds in the database, each with the instant before
	// which it surely has not expired: when the statement that last set its expiry was sent, plus
	// leaseTTL.
	owned   map[string]time.Time
	running []string      // what Hold was last told
	lost    chan struct{} // a renewal found leases gone
	// Of a process that does no work: when it last saw every awaited lease held (zero: never),
	// and which were not at the last look.
	lastAllHeld time.Time
	unheld      []string
}

// New prepares this process's place in the cluster; Run it.
func New(db *sqldb.DB, cfg Config) *Node {
	if !cfg.Role.Works() {
		cfg.Leased, cfg.Always = nil, nil
	} else {
		cfg.Awaited = nil
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return &Node{db: db, cfg: cfg, id: newProcessID(), pid: os.Getpid(), owned: map[string]time.Time{}, lost: make(chan struct{}, 1)}
}

// ID is this process's id in the cluster view.
func (n *Node) ID() string { return n.id }

// unheldFor is how long some awaited lease may go unheld before WorkersRun says so: longer than
// the gap of a takeover (a dead worker's lease expired, taken by another within expiredLongAgo
// plus balanceEvery, 2.5 s) and of a handover (a stopping worker deletes its leases, another
// takes each within balanceEvery), so that an api process stays ready while workers are killed
// or restart one at a time, as long as one runs.
const unheldFor = leaseTTL

// WorkersRun tells whether the work this process's requests wait for runs somewhere, and if not,
// which leases no worker holds at the latest look that succeeded (none: every one was held then,
// but no look has succeeded for unheldFor since, the database not answering this process). A
// process that works itself (all, worker) and a process on SQLite (the one process, which runs
// everything) always say yes. A process that does no work (api) says yes while its last look
// that found a worker hold every awaited lease (an unexpired row in leases) is less than
// unheldFor old, whatever the looks since found or failed to find (deployment.md states this
// rule): its writes would otherwise wait for read models nobody applies, and answer 503 after
// 10 s.
func (n *Node) WorkersRun() (bool, []string) {
	if len(n.cfg.Awaited) == 0 || n.db.Dialect != sqldb.Postgres {
		return true, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lastAllHeld.IsZero() {
		if n.unheld == nil {
			return false, slices.Clone(n.cfg.Awaited) // not looked yet
		}
		return false, slices.Clone(n.unheld)
	}
	if time.Since(n.lastAllHeld) >= unheldFor {
		return false, slices.Clone(n.unheld)
	}
	return true, nil
}

// lookForWorkers reads which awaited leases a worker holds now (WorkersRun).
func (n *Node) lookForWorkers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	held, err := leaseNames(ctx, n.db.Write, `SELECT name FROM leases WHERE expires_at > `+nowMillis(n.db.Dialect))
	if err != nil {
		// Not known: the last look stands, and ages (WorkersRun) until a look succeeds.
		if !errors.Is(ctx.Err(), context.Canceled) {
			n.cfg.Log.Warn("cluster: look for the workers", zap.Error(err))
		}
		return
	}
	unheld := []string{}
	for _, name := range n.cfg.Awaited {
		if !slices.Contains(held, name) {
			unheld = append(unheld, name)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	wasRunning := !n.lastAllHeld.IsZero() && time.Since(n.lastAllHeld) < unheldFor
	n.unheld = unheld
	if len(unheld) == 0 {
		n.lastAllHeld = time.Now()
		if !wasRunning {
			n.cfg.Log.Info("cluster: workers hold every lease this process's writes wait for")
		}
	} else if wasRunning && time.Since(n.lastAllHeld)+renewEvery >= unheldFor {
		n.cfg.Log.Warn("cluster: no worker holds some leases this process's writes wait for", zap.Strings("leases", unheld))
	}
}

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
		n.setRunning(ctx, func() []string { return slices.Clone(n.cfg.Leased) }, true)
		n.beatUntil(ctx)
		return nil
	}
	if len(n.cfg.Awaited) > 0 {
		n.lookForWorkers(ctx) // at once: an api process is ready as soon as workers run
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); n.beatUntil(ctx) }()
	go func() { defer wg.Done(); n.renewUntil(ctx) }()
	go func() { defer wg.Done(); n.watch(ctx) }()
	n.balanceUntil(ctx)
	wg.Wait()
	return nil
}

// leave hands everything over: the work stops, then the leases and the heartbeat go.
//
// The stop is bounded by the leases' expiry (setRunning: 4 s at most once renewals ended), and
// each deletion by callTimeout: both rows go away by themselves anyway, so a worker cut off from
// the database still exits well within the 10 s operator-api.md allows a SIGTERM.
func (n *Node) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.setRunning(ctx, func() []string { return nil }, false)
	if n.db.Dialect == sqldb.Postgres {
		callCtx, cancel := context.WithTimeout(context.Background(), callTimeout)
		if _, err := n.db.Write.ExecContext(callCtx, `DELETE FROM leases WHERE holder = $1`, n.id); err != nil {
			n.cfg.Log.Warn("cluster: hand the leases over (they expire instead)", zap.Error(err))
		}
		cancel()
	}
	callCtx, cancelCall := context.WithTimeout(context.Background(), callTimeout)
	defer cancelCall()
	if _, err := n.db.Write.ExecContext(callCtx, `DELETE FROM cluster_processes WHERE id = $1`, n.id); err != nil {
		n.cfg.Log.Warn("cluster: leave the cluster view (it ages out)", zap.Error(err))
	}
	n.cfg.Log.Info("cluster: work handed over")
}

// renewUntil renews the leases every renewEvery until ctx ends (PostgreSQL).
func (n *Node) renewUntil(ctx context.Context) {
	t := time.NewTicker(renewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.renew(ctx)
	}
}

// beatUntil renews the heartbeat every renewEvery until ctx ends (each statement within
// callTimeout: a database that does not answer delays the next try by that much at most).
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
		if len(n.cfg.Awaited) > 0 && n.db.Dialect == sqldb.Postgres {
			n.lookForWorkers(ctx)
		}
		if beats%forgetEvery == 0 {
			n.forgetTheGone(ctx)
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
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
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
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
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
// over while this process could not renew: hung, or cut off) is dropped, and the balancer stops
// its work. A renewal that fails changes nothing: the watchdog (watch) stops the work of a lease
// not renewed in time, whether the database refuses or never answers.
func (n *Node) renew(ctx context.Context) {
	now := time.Now()
	n.mu.Lock()
	before := slices.Collect(maps.Keys(n.owned))
	var first time.Time // the soonest stop point still ahead
	for _, until := range n.owned {
		if stop := until.Add(-stopMargin); stop.After(now) && (first.IsZero() || stop.Before(first)) {
			first = stop
		}
	}
	n.mu.Unlock()
	if len(before) == 0 || first.IsZero() {
		return // nothing, or nothing the watchdog does not give up now
	}
	sent := time.Now() // the database sets the expiries after this instant
	// The answer is waited for until the watchdog gives up the first of these leases, and no
	// longer: a connection stuck for good (half open after a failover) then holds up one try,
	// and the next, a tick later, may find a sound one while the later leases still hold.
	callCtx, cancel := context.WithDeadline(ctx, first)
	defer cancel()
	// Only the leases owned here: one the watchdog stopped the work of is let expire, for
	// whichever worker looks first (this one included), rather than kept by a process that does
	// not run it.
	owned, ownedArgs := sqldb.AnyOf(n.db.Dialect, "name", 3, before)
	kept, err := leaseNames(callCtx, n.db.Write, `UPDATE leases SET expires_at = `+nowMillis(n.db.Dialect)+` + $1 WHERE holder = $2 AND `+owned+` RETURNING name`,
		append([]any{leaseTTL.Milliseconds(), n.id}, ownedArgs...)...)
	if err != nil {
		if ctx.Err() == nil {
			n.cfg.Log.Warn("cluster: renew leases", zap.Error(err))
		}
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	dropped := false
	for _, name := range before {
		if _, still := n.owned[name]; !still {
			continue // released, or stopped by the watchdog, meanwhile
		}
		if slices.Contains(kept, name) {
			n.owned[name] = sent.Add(leaseTTL)
			continue
		}
		delete(n.owned, name)
		dropped = true
		n.cfg.Log.Warn("cluster: lost a lease", zap.String("lease", name), zap.String("why", "another process holds it"))
	}
	if dropped {
		select {
		case n.lost <- struct{}{}:
		default:
		}
	}
}

// watch is the watchdog: every watchEvery it stops the work of each lease whose expiry is less
// than stopMargin away by this process's bound (owned), whatever the renewals do (they may hang
// on a database that does not answer). The lease is then no longer this process's: it is not
// renewed, and expires for any worker to take (this one too, once the database answers, or
// before it expires if the row still names this process: balance); the work is told to stop by
// the lease's expiry.
func (n *Node) watch(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		var expiring []string
		var expiry time.Time
		n.mu.Lock()
		for name, until := range n.owned {
			if now.Before(until.Add(-stopMargin)) {
				continue
			}
			delete(n.owned, name)
			expiring = append(expiring, name)
			if expiry.IsZero() || until.Before(expiry) {
				expiry = until
			}
		}
		n.mu.Unlock()
		if len(expiring) == 0 {
			continue
		}
		slices.Sort(expiring)
		for _, name := range expiring {
			n.cfg.Log.Warn("cluster: lost a lease", zap.String("lease", name), zap.String("why", "not renewed in time: its work stops before the lease expires"),
				zap.Duration("expiresIn", expiry.Sub(now)))
		}
		stopCtx, cancel := context.WithDeadline(ctx, expiry)
		n.setRunning(stopCtx, n.runningNow, false)
		cancel()
		if late := time.Since(expiry); late > 0 {
			n.cfg.Log.Error("cluster: the work of a lease not renewed stopped after the lease may have expired", zap.Strings("leases", expiring), zap.Duration("late", late))
		}
	}
}

// balanceUntil takes, releases and runs leases until ctx ends: every balanceEvery, and at once
// when a renewal lost some.
func (n *Node) balanceUntil(ctx context.Context) {
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
// (after their work stopped here) while above, and runs what it holds. Each statement has
// callTimeout (a take, up to the stop point of the lease it takes): a database that does not
// answer ends the round, to be tried again.
func (n *Node) balance(ctx context.Context) error {
	if len(n.cfg.Leased) == 0 {
		return nil
	}
	// Work whose lease was lost (taken over, or not renewed in time) stops first, whatever the
	// database answers next.
	n.mu.Lock()
	lost := slices.ContainsFunc(n.running, func(name string) bool { _, ok := n.owned[name]; return !ok })
	n.mu.Unlock()
	if lost {
		n.setRunning(ctx, n.runningNow, true)
	}
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	now := nowMillis(n.db.Dialect)
	var workers int
	if err := n.db.Write.QueryRowContext(callCtx, `SELECT COUNT(*) FROM cluster_processes WHERE role <> $1 AND last_seen_at > `+now+` - $2`,
		string(RoleAPI), leaseTTL.Milliseconds()).Scan(&workers); err != nil {
		return fmt.Errorf("cluster: count workers: %w", err)
	}
	share := (len(n.cfg.Leased) + max(workers, 1) - 1) / max(workers, 1)
	n.mu.Lock()
	owned := map[string]bool{}
	for name := range n.owned {
		owned[name] = true
	}
	n.mu.Unlock()

	if len(owned) < share || n.anyExpiredLongAgo(ctx) {
		leases, err := n.readLeases(ctx)
		if err != nil {
			return err
		}
		for _, name := range n.cfg.Leased {
			l, exists := leases[name]
			// A row this process holds without owning it is taken again: a renewal sent just
			// before the watchdog gave the lease up, or a take that timed out here but committed
			// there, may have pushed its expiry 5 s out, and nobody else may take it before then.
			// Taking it is safe: no other worker holds it, and its work restarts only after the
			// watchdog's stop (holdMu).
			if owned[name] || (exists && l.expiredFor < 0 && l.holder != n.id) {
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
				if exists && l.holder != "" && l.holder != n.id {
					n.cfg.Log.Info("cluster: took a lease over", zap.String("lease", name), zap.String("from", l.holder), zap.Duration("expiredFor", l.expiredFor))
					if n.cfg.Observer != nil {
						n.cfg.Observer.TookOver(name)
					}
				} else if exists && l.holder == n.id {
					n.cfg.Log.Info("cluster: took back a lease it had given up", zap.String("lease", name))
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
	n.setRunning(ctx, func() []string {
		// Released before the change: the watchdog, waiting for holdMu meanwhile, must not
		// start their work again once it has stopped.
		for _, name := range release {
			delete(n.owned, name)
		}
		return run
	}, true)
	for _, name := range release {
		releaseCtx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := n.db.Write.ExecContext(releaseCtx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, n.id)
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: release %s: %w", name, err)
		}
		n.cfg.Log.Info("cluster: released a lease to another worker", zap.String("lease", name), zap.Int("share", share))
	}
	return nil
}

// setRunning makes what runs here what pick returns, then (beat) shows the change in the cluster
// view. pick is called with holdMu and mu held, so that it sees owned and running as they are
// when the change is made (a caller that looked before waiting for holdMu could restart work
// the previous change stopped), and may change owned (the balancer removes what it releases, so
// that nothing restarts it). On PostgreSQL the work of a lease this process does not own is
// never started.
func (n *Node) setRunning(ctx context.Context, pick func() []string, beat bool) {
	// The heartbeat comes after holdMu is released: it is a database call of up to callTimeout,
	// and the watchdog may be waiting for holdMu to stop the work of an expiring lease.
	if n.change(ctx, pick) && beat && ctx.Err() == nil {
		_ = n.beat(ctx) // the cluster view shows the change now, not at the next heartbeat
	}
}

// change is setRunning's change of what runs; it tells whether there was one.
func (n *Node) change(ctx context.Context, pick func() []string) bool {
	n.holdMu.Lock()
	defer n.holdMu.Unlock()
	n.mu.Lock()
	// The bounds are read before pick: the leases pick releases are still this process's in the
	// database until their work stopped, so their expiry bounds the change too.
	bounds := maps.Clone(n.owned)
	run := n.ownedOnly(pick())
	same := slices.Equal(run, n.running)
	n.mu.Unlock()
	if same {
		return false
	}
	// The change is made (the checkpoints saved, if the database answers) by stopMargin before
	// the first expiry among the leases owned here, whatever it waits for: the watchdog starts
	// to stop a lease's work then, and needs holdMu, which this change holds.
	var by time.Time
	for _, until := range bounds {
		if by.IsZero() || until.Before(by) {
			by = until
		}
	}
	if !by.IsZero() {
		by = by.Add(-stopMargin)
	}
	for {
		n.hold(ctx, by, run)
		n.mu.Lock()
		n.running = run
		still := n.ownedOnly(run)
		n.mu.Unlock()
		if len(still) == len(run) {
			break
		}
		// The watchdog gave some of run up while Hold ran (Hold restarted them, with the rest):
		// stop them at once, by their expiry, rather than when the watchdog gets holdMu.
		by = time.Time{}
		for _, name := range run {
			if !slices.Contains(still, name) && (by.IsZero() || bounds[name].Before(by)) {
				by = bounds[name]
			}
		}
		run = still
	}
	if n.cfg.Observer != nil {
		n.cfg.Observer.LeasesHeld(run)
	}
	n.cfg.Log.Info("cluster: runs", zap.Strings("leases", run))
	return true
}

// hold tells Hold what runs now, with a deadline of by if set.
func (n *Node) hold(ctx context.Context, by time.Time, run []string) {
	if !by.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, by)
		defer cancel()
	}
	n.cfg.Hold(ctx, run)
}

// ownedOnly is names less those this process does not own, on PostgreSQL (on SQLite it owns
// everything, and owned is not kept). Call it with mu held.
func (n *Node) ownedOnly(names []string) []string {
	if n.db.Dialect != sqldb.Postgres {
		return slices.Clone(names)
	}
	return slices.DeleteFunc(slices.Clone(names), func(name string) bool { _, ok := n.owned[name]; return !ok })
}

// runningNow is a pick for setRunning: what runs now (setRunning drops what is no longer owned).
func (n *Node) runningNow() []string { return slices.Clone(n.running) }

type leaseRow struct {
	holder     string
	expiredFor time.Duration // negative: still held
}

func (n *Node) readLeases(ctx context.Context) (map[string]leaseRow, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
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
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var any bool
	err := n.db.Write.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM leases WHERE expires_at < `+nowMillis(n.db.Dialect)+` - $1)`,
		expiredLongAgo.Milliseconds()).Scan(&any)
	return err == nil && any
}

// take claims a lease that is free (no row), expired, or held by this process (see balance),
// and tells whether this process got it: another worker may have been quicker. A lease taken is
// owned from then on, until the bound of its expiry that the watchdog keeps.
func (n *Node) take(ctx context.Context, name string) (bool, error) {
	sent := time.Now() // the database sets the expiry after this instant
	// As a renewal: an answer that comes before the watchdog would give the lease up is of use.
	callCtx, cancel := context.WithDeadline(ctx, sent.Add(leaseTTL-stopMargin))
	defer cancel()
	now := nowMillis(n.db.Dialect)
	res, err := n.db.Write.ExecContext(callCtx, `INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, `+now+` + $3)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE leases.expires_at < `+now+` OR leases.holder = excluded.holder`,
		name, n.id, leaseTTL.Milliseconds())
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return false, err
		}
		return false, fmt.Errorf("cluster: take %s: %w", name, err)
	}
	got, _ := res.RowsAffected()
	if got == 1 {
		n.mu.Lock()
		n.owned[name] = sent.Add(leaseTTL)
		n.mu.Unlock()
	}
	return got == 1, nil
}

// leaseNames runs a statement that answers lease names, and returns them.
func leaseNames(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, rows.Err()
}
