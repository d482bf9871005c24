package sqldb

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable tells whether err means that the database could not be reached, or refused more
// work for now, rather than that the statement was wrong: a connection that failed or was cut
// (PostgreSQL's class 08, a shutdown, a refused or broken socket), too many connections or
// another lack of resources (class 53), or a SQLite file locked past its busy timeout. A request
// that met it may succeed when it is tried again, so the APIs answer 503 with Retry-After, not
// 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53") ||
			pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" // shutdowns, cannot connect now
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		code := liteErr.Code() & 0xff // the primary result code
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	var netErr net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr)
}
