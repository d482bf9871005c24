package sqldb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// sqliteFileMode is the mode of every file of a SQLite database: the database, its -wal and -shm
// files and the lock file. They hold every contact's personal data (and the key file beside them,
// sealing.LoadOrCreateKeyFile, the key to what is sealed): readable by the service's user only,
// whatever the umask.
const sqliteFileMode = 0o600

// sqliteFileSuffixes name the files of a database at path: the database itself, the write-ahead
// log and its shared-memory index, which SQLite creates with the database's mode, and the lock
// file of Claim.
var sqliteFileSuffixes = []string{"", "-wal", "-shm", ".lock"}

// prepareSQLiteFiles creates the database file with mode 0600 before SQLite opens it (an empty
// file is an empty database: SQLite would create it with 0644 less the umask), and narrows to 0600
// the files of a database made before this rule.
func prepareSQLiteFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, sqliteFileMode)
	if err != nil {
		return fmt.Errorf("sqldb: create sqlite file %s: %w", path, err)
	}
	f.Close()
	return restrictSQLiteFiles(path)
}

// restrictSQLiteFiles sets mode 0600 on those files of the database at path that exist.
func restrictSQLiteFiles(path string) error {
	for _, suffix := range sqliteFileSuffixes {
		name := path + suffix
		info, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sqldb: stat %s: %w", name, err)
		}
		if info.Mode().Perm() != sqliteFileMode {
			if err := os.Chmod(name, sqliteFileMode); err != nil {
				return fmt.Errorf("sqldb: restrict %s to its owner: %w", name, err)
			}
		}
	}
	return nil
}

// sqliteFile is the database file at path with its symbolic links resolved: the one file every
// spelling of the database (a link to it, a link to its directory) shares, and beside which
// SQLite keeps the -wal and -shm files. A file not made yet resolves through its directory.
func sqliteFile(path string) (string, error) {
	file, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		var dir string
		if dir, err = filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			file = filepath.Join(dir, filepath.Base(path))
		}
	}
	if err != nil {
		return "", fmt.Errorf("sqldb: resolve sqlite file %s: %w", path, err)
	}
	return file, nil
}
