//go:build !unix

package sqldb

import "os"

// lockFile locks nothing where flock does not exist: there one process per SQLite file is the
// operator's care.
func lockFile(*os.File) error { return nil }
