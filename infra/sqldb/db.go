// Package sqldb opens the database behind FUNNEL_DATABASE_URL, in either storage mode, and
// applies its schema. Everything else speaks plain SQL through database/sql: the few places where
// PostgreSQL and SQLite differ ask the Dialect.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"           // registers the "sqlite" driver
)

// Dialect is the storage mode.
type Dialect string

const (
	// Postgres is the production mode: many processes may share the database.
	Postgres Dialect = "postgres"
	// SQLite is the embedded default: one process owns the file.
	SQLite Dialect = "sqlite"
)

// DB is an open database. In SQLite mode writes go through a single connection, so writers queue
// in Go instead of failing with SQLITE_BUSY, and reads use a pool of their own. In PostgreSQL
// mode both are the same pool.
type DB struct {
	Dialect Dialect
	Write   *sql.DB
	Read    *sql.DB
	// Projections is where state derived from the log is written (read models, the webhook
	// outbox). In PostgreSQL mode it is a pool of its own whose commits do not wait for the disk
	// (synchronous_commit=off): see BeginDerivedTx. The event log always commits synchronously.
	Projections *sql.DB

	path  string   // of the SQLite file, as the URL wrote it
	file  string   // path with its symbolic links resolved (sqliteFile)
	claim *os.File // the lock file Claim holds, released by Close
	// kept lends the statements the write pool keeps to the transactions of BeginDerivedTx on
	// SQLite (Applier); nil on PostgreSQL.
	kept *keptStatements
}

// Path is the file of a SQLite database as its URL wrote it, "" on PostgreSQL. The server key
// sits beside it under this name (PATH.key), even when PATH is a symbolic link: a key file has
// always been looked for there, and looking beside the link's target instead would make a
// deployment that links its database start with a fresh key that opens nothing sealed before.
// The claim's lock follows the link (Claim).
func (db *DB) Path() string { return db.path }

// Open connects to a "sqlite:PATH" or "postgres://…" URL.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	switch {
	case strings.HasPrefix(rawURL, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(rawURL, "sqlite:"))
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return openPostgres(ctx, rawURL)
	default:
		return nil, fmt.Errorf("sqldb: database url must start with sqlite: or postgres:// (got %q)", redact(rawURL))
	}
}

// OpenExisting opens a database that funnel has set up already, for the commands that only read
// it (history, projections): a missing SQLite file, or a database without funnel's schema, is an
// error that says so, rather than a new empty database.
func OpenExisting(ctx context.Context, rawURL string) (*DB, error) {
	if path, ok := strings.CutPrefix(rawURL, "sqlite:"); ok && path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("sqldb: no database at %s (run funnel migrate or funnel serve first): %w", path, err)
		}
	}
	db, err := Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	var one int
	if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM projection_checkpoints`).Scan(&one); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqldb: %s has no funnel schema (run funnel migrate first): %w", redact(rawURL), err)
	}
	return db, nil
}

func openPostgres(ctx context.Context, rawURL string) (*DB, error) {
	// Plans that cannot flip: PostgreSQL caches a generic plan for a prepared statement after a few
	// executions and keeps it until the table is analyzed again. A plan cached while a table was a
	// page or two (a new deployment, a new database) is a sequential scan, and it stays one as the
	// table grows to millions of rows (on a never-analyzed PostgreSQL, for good). Every query funnel
	// runs has an index made for it, so its sessions take a sequential scan only where no index
	// applies. An operator who wants the planner's own choice sets enable_seqscan in the URL.
	// JIT compilation goes with it: PostgreSQL decides it by the plan's total cost, which a
	// sequential scan that has to stay now inflates by 10^10, so every such query would be
	// compiled, for tens of milliseconds of CPU, on every execution.
	rawURL, poolCap, err := takePoolCap(rawURL)
	if err != nil {
		return nil, err
	}
	sessionURL, err := withSettings(rawURL, "enable_seqscan", "off", "jit", "off")
	if err != nil {
		return nil, err
	}
	pool, err := openPostgresPool(ctx, sessionURL, min(24, poolCap))
	if err != nil {
		return nil, err
	}
	// A projection can be rebuilt from the log, so its commits need not wait for the disk.
	projectionsURL, err := withSettings(sessionURL, "synchronous_commit", "off")
	if err != nil {
		pool.Close()
		return nil, err
	}
	projections, err := openPostgresPool(ctx, projectionsURL, min(16, poolCap)) // about one per projection
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &DB{Dialect: Postgres, Write: pool, Read: pool, Projections: projections}, nil
}

// PoolCapParam, in the query of a PostgreSQL URL, caps each of the two pools (24 and 16
// connections) at its value: pool_max_conns=8 opens at most 16 connections. It is funnel's, not
// a PostgreSQL setting, and is taken out of the URL before it is used. The tests set it, so that
// packages tested in parallel stay within the server's max_connections.
const PoolCapParam = "pool_max_conns"

// takePoolCap returns the URL without PoolCapParam, and the cap it set (a large number if none).
func takePoolCap(rawURL string) (string, int, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", 0, unparsable(err)
	}
	q := u.Query()
	if !q.Has(PoolCapParam) {
		return rawURL, math.MaxInt, nil
	}
	n, err := strconv.Atoi(q.Get(PoolCapParam))
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("sqldb: %s must be a positive number (got %q)", PoolCapParam, q.Get(PoolCapParam))
	}
	q.Del(PoolCapParam)
	u.RawQuery = q.Encode()
	return u.String(), n, nil
}

// withSettings adds session settings to a PostgreSQL URL (pgx sends parameters it does not know
// as settings), given as name, value pairs; a setting the URL names already keeps its value.
func withSettings(rawURL string, nameValues ...string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", unparsable(err)
	}
	q := u.Query()
	for i := 0; i+1 < len(nameValues); i += 2 {
		if !q.Has(nameValues[i]) {
			q.Set(nameValues[i], nameValues[i+1])
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func openPostgresPool(ctx context.Context, rawURL string, size int) (*sql.DB, error) {
	pool, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("sqldb: open postgres: %w", err)
	}
	pool.SetMaxOpenConns(size)
	pool.SetMaxIdleConns(size)
	pool.SetConnMaxIdleTime(5 * time.Minute)
	if err := pool.PingContext(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqldb: connect to postgres %s: %w", redact(rawURL), err)
	}
	return pool, nil
}

func openSQLite(ctx context.Context, path string) (*DB, error) {
	if path == "" {
		return nil, fmt.Errorf("sqldb: sqlite url needs a file path, as in sqlite:funnel.db")
	}
	if err := prepareSQLiteFiles(path); err != nil {
		return nil, err
	}
	file, err := sqliteFile(path)
	if err != nil {
		return nil, err
	}
	// FULL sync: an answered write survives a power cut, not only a crash of the process.
	// secure_delete: what a statement deletes or overwrites is zeroed in its page, so that an
	// erased person's rows leave nothing in the file's free space (ScrubErased, erasure).
	pragmas := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(on)&_pragma=synchronous(full)&_pragma=secure_delete(on)"
	// The path goes into a file: URI, where ? starts the query, # a fragment and % an escape.
	uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	// Statement journals in memory (temp_store=MEMORY, on the write connection only): a statement
	// that writes several rows inside a transaction (the appender's multi-row INSERTs) keeps a
	// statement journal, which SQLite holds in memory up to 64 KiB and beyond that spills to a
	// deleted temporary file under /var/tmp, written page by page: most group commits spilled,
	// some 28,000 extra pwrite calls per 3,000 upserts (docs/performance.md). SQLite decides where at
	// the start of each transaction, from temp_store. The price: this connection's temporary
	// tables and every statement journal are in memory too, however large, so Migrate and Rebuild,
	// whose statements span whole tables, put them on disk while they run (TempStoreOnDisk). The
	// read pool keeps the default, files.
	write, err := sql.Open("sqlite", uri+"?_txlock=immediate&_pragma=journal_mode(wal)&_pragma=temp_store(memory)&"+pragmas)
	if err != nil {
		return nil, fmt.Errorf("sqldb: open sqlite: %w", err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxIdleTime(0)
	write.SetConnMaxLifetime(0)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqldb: open sqlite file %s: %w", path, err)
	}
	// The first connection made the -wal and -shm files, with the database's mode; an older
	// database's may be wider.
	if err := restrictSQLiteFiles(file); err != nil {
		write.Close()
		return nil, err
	}
	read, err := sql.Open("sqlite", uri+"?_pragma=query_only(1)&"+pragmas)
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqldb: open sqlite: %w", err)
	}
	read.SetMaxOpenConns(8)
	read.SetMaxIdleConns(8)
	keepStatementsOf(write)
	keepStatementsOf(read)
	return &DB{Dialect: SQLite, Write: write, Read: read, Projections: write, path: path, file: file, kept: &keptStatements{pool: write}}, nil
}

// Close closes every pool, then gives up the claim on a SQLite file (Claim): only once nothing of
// this process writes to it any more.
func (db *DB) Close() error {
	closed := map[*sql.DB]bool{}
	var errs []error
	for _, pool := range []*sql.DB{db.Write, db.Read, db.Projections} {
		if !closed[pool] {
			closed[pool] = true
			// Closed first: a statement prepared once a write is done (ExecDerived, the
			// appender) then fails rather than enter the cache after it was cleared.
			errs = append(errs, pool.Close())
			forgetStatements(pool)
		}
	}
	if db.claim != nil {
		errs = append(errs, db.claim.Close())
		db.claim = nil
	}
	return errors.Join(errs...)
}

// DialectOf tells the storage mode of a pool opened by Open, for code that holds only the pool.
func DialectOf(pool *sql.DB) Dialect {
	if _, ok := pool.Driver().(*stdlib.Driver); ok {
		return Postgres
	}
	return SQLite
}

// NowMillis is SQL for the database's clock in unix milliseconds: what several processes judge
// leases and claims by, whatever their hosts' clocks say.
func (d Dialect) NowMillis() string {
	if d == Postgres {
		return `(extract(epoch from clock_timestamp()) * 1000)::bigint`
	}
	return `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`
}

// ForUpdate is the row-locking suffix of a SELECT inside a write transaction. SQLite needs none:
// its write transactions are serialized (immediate transactions on a single connection).
func (db *DB) ForUpdate() string {
	return db.Dialect.ForUpdate()
}

// ForUpdate is DB.ForUpdate for code that holds only the dialect.
func (d Dialect) ForUpdate() string {
	if d == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// unparsable is the error of a database URL that does not parse, without the URL: url.Error
// quotes it whole, the password included.
func unparsable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("sqldb: the database url does not parse (a password with %%, # or a space must be percent-encoded): %w", err)
}

// redact hides a password in a database URL before it is logged; a URL that does not parse is
// not shown at all, since where its password ends cannot be told.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a database url that does not parse)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	// pgx and libpq take a password as a parameter too.
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		for _, name := range []string{"password", "sslpassword"} {
			if q.Has(name) {
				q.Set(name, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// ForgetStatements drops the statements pgx prepared and cached on conn, on the server and in
// pgx alike (PostgreSQL; SQLite caches none). A prepared statement keeps the tables it was
// planned against, so a temporary table created to shadow a live one is seen only by statements
// prepared after it exists.
func (db *DB) ForgetStatements(ctx context.Context, conn *sql.Conn) error {
	if db.Dialect != Postgres {
		return nil
	}
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("sqldb: not a pgx connection: %T", driverConn)
		}
		if err := c.Conn().DeallocateAll(ctx); err != nil {
			return fmt.Errorf("sqldb: forget prepared statements: %w", err)
		}
		return nil
	})
}
