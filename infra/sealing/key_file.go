package sealing

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// maxKeyFile bounds what is read of a key file: a key is 44 characters of base64.
const maxKeyFile = 1 << 10

// KeyFile returns the key kept in the file at path, creating the file with a fresh random key
// when there is none; created tells which. It is how an embedded (SQLite) service gets a key
// without setup: the file sits beside the database, so a copy of the database alone reveals no
// sealed secret, and it must be backed up with the database.
//
// The file is created whole or not at all, readable by its owner only (0600): the key is
// written to a temporary file that is then linked to path, which fails rather than replaces a
// file that appeared meanwhile. An existing file is never rewritten: a key that cannot be read
// is an error, not a reason to make a new one, since a new key cannot open what the old one
// sealed.
func KeyFile(path string) (key Key, created bool, err error) {
	key, err = ReadKeyFile(path)
	if err == nil {
		narrow(path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	text, err := NewKey()
	if err != nil {
		return Key{}, false, err
	}
	if err := createExclusive(path, []byte(text+"\n")); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process created it first: use that one
			key, err = ReadKeyFile(path)
			return key, false, err
		}
		return Key{}, false, fmt.Errorf("sealing: create key file %s: %w", path, err)
	}
	key, err = ParseKey(text)
	return key, true, err
}

// narrow makes an existing key file readable by its owner only, as KeyFile creates one: a file
// restored from a backup, or made by hand, may be readable by every local user, while the
// database beside it is not (sqldb narrows its files). Where the file cannot be changed (a
// read-only mount, another owner) it is left as it is: its mode is then the operator's to set.
func narrow(path string) {
	if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(path, info.Mode().Perm()&0o600)
	}
}

// ReadKeyFile returns the key kept in the file at path; a missing file is an error that wraps
// fs.ErrNotExist.
func ReadKeyFile(path string) (Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return Key{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile))
	if err != nil {
		return Key{}, fmt.Errorf("sealing: read key file %s: %w", path, err)
	}
	key, err := ParseKey(string(b))
	if err != nil {
		return Key{}, fmt.Errorf("sealing: key file %s: %w", path, err)
	}
	return key, nil
}

// createExclusive writes data to a new file at path, mode 0600, durably: never a partly written
// file at path, and never over an existing one (fs.ErrExist).
func createExclusive(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*") // CreateTemp makes it 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	// The new name must survive a power cut as well as the content.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
