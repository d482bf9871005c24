package sqldb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// errLocked is what lockFile returns when another open file holds the lock.
var errLocked = errors.New("locked")

// Claim makes this process the one that serves a SQLite database: SQLite mode is one process
// (DESIGN.md invariant 9), with an in-process transport and commands serialized per stream inside
// the process; two would each relay the log, project it and dispatch webhooks. It takes an
// exclusive lock on a file beside the database, PATH.lock, held until Close. PATH is the file the
// URL names with its symbolic links resolved (sqliteFile): a link to a served database, or to its
// directory, names the same lock, and a second serve through it is refused. The operating system
// drops the lock when the process ends, however it ends, so a crash never leaves a stale one; the
// file itself stays, since deleting it could let two processes each lock a file of that name. A
// second claim, by another process or another DB of this one, fails with the pid of the holder.
// PostgreSQL is shared by many processes: there Claim does nothing.
func (db *DB) Claim() error {
	if db.Dialect != SQLite || db.claim != nil {
		return nil
	}
	name := db.file + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, sqliteFileMode)
	if err != nil {
		return fmt.Errorf("sqldb: open lock file: %w", err)
	}
	if err := lockFile(f); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 32)) // best effort: the pid is only for the message
		f.Close()
		if errors.Is(err, errLocked) {
			pid := strings.TrimSpace(string(holder))
			if pid == "" {
				pid = "unknown"
			}
			return fmt.Errorf("sqldb: sqlite:%s is already served by another process (pid %s)", db.path, pid)
		}
		return fmt.Errorf("sqldb: lock %s: %w", name, err)
	}
	if err := writePID(f); err != nil {
		f.Close()
		return fmt.Errorf("sqldb: write %s: %w", name, err)
	}
	db.claim = f
	return nil
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}
