package service

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// keyFileSuffix names the key file of a SQLite database: PATH.key beside PATH as the URL writes
// it, a symbolic link unresolved (sqldb.DB.Path says why).
const keyFileSuffix = ".key"

// newSealer returns the sealer of the server key, which seals the secrets the database must
// hold but must not reveal (docs/architecture.md "Secrets"). FUNNEL_SECRET_KEY gives the keys
// when it is set (Validate checked them, and that PostgreSQL has them). Otherwise the database is
// SQLite, whose key lives in a file beside it, created with a fresh random key on the first
// start: `serve` needs no setup, and a copy of the database without its key file reveals no token.
func newSealer(cfg Config, db *sqldb.DB, log *zap.Logger) (*sealing.Sealer, error) {
	keyFile := ""
	if db.Dialect == sqldb.SQLite {
		keyFile = db.Path() + keyFileSuffix
	}
	if cfg.SecretKey != "" {
		keys, err := sealing.ParseKeys(cfg.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("app: FUNNEL_SECRET_KEY: %w", err)
		}
		if keyFile != "" {
			warnOfUnlistedKeyFile(keyFile, keys, log)
		}
		return keysInUse(keys, "FUNNEL_SECRET_KEY", log)
	}
	if keyFile == "" {
		return nil, errors.New("app: FUNNEL_SECRET_KEY is required with a postgres:// database")
	}
	key, created, err := sealing.KeyFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("app: the server key (FUNNEL_SECRET_KEY is not set): %w", err)
	}
	if created {
		log.Info("created the server key file beside the database: back it up with the database, which cannot reveal its activation tokens without it",
			zap.String("file", keyFile), zap.String("keyId", key.ID()))
	}
	return keysInUse([]sealing.Key{key}, keyFile, log)
}

// keysInUse makes the sealer of keys and logs their ids (never the keys), from where.
func keysInUse(keys []sealing.Key, from string, log *zap.Logger) (*sealing.Sealer, error) {
	s, err := sealing.New(keys...)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	ids := s.KeyIDs()
	log.Info("server key", zap.String("from", from), zap.String("sealsWith", ids[0]), zap.Strings("opensWith", ids))
	return s, nil
}

// warnOfUnlistedKeyFile warns when FUNNEL_SECRET_KEY replaces the key file of a SQLite database
// without listing its key: what that key sealed no longer opens.
func warnOfUnlistedKeyFile(keyFile string, keys []sealing.Key, log *zap.Logger) {
	fileKey, err := sealing.ReadKeyFile(keyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		log.Warn("FUNNEL_SECRET_KEY replaces the key file beside the database, which cannot be read", zap.String("file", keyFile), zap.Error(err))
		return
	}
	if !slices.ContainsFunc(keys, func(k sealing.Key) bool { return k.ID() == fileKey.ID() }) {
		log.Warn("FUNNEL_SECRET_KEY replaces the key file beside the database without listing its key: activation tokens it sealed cannot be "+
			"opened (list it after the new key to keep them)", zap.String("file", keyFile), zap.String("keyId", fileKey.ID()))
	}
}
