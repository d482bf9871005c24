package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// OpenLog opens the event log of db for a tool that reads it (`funnel history`, `funnel
// projections rebuild`), with the server key that opens the persons' keys: secretKey
// (FUNNEL_SECRET_KEY) if given, else a SQLite database's key file if there is one; it never
// creates one. Without a key it refuses when the log holds sealed personal values: they would
// read as null, which is how an erased person's values read, so a history would show a live
// contact as erased (with exit 0), and a rebuild would write nulls over the read models.
func OpenLog(ctx context.Context, db *sqldb.DB, secretKey string) (*eventstore.Store, error) {
	sealer, err := readingSealer(db, secretKey)
	if err != nil {
		return nil, err
	}
	if sealer == nil {
		var sealed int
		if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM person_keys WHERE sealed_key IS NOT NULL LIMIT 1) AS any_key`).Scan(&sealed); err != nil {
			return nil, fmt.Errorf("app: look for persons' keys: %w", err)
		}
		if sealed > 0 {
			return nil, errors.New("app: the log holds sealed personal values: give the server key (FUNNEL_SECRET_KEY, or the key file beside a SQLite database)")
		}
	}
	store := eventstore.New(db)
	if sealer != nil {
		store.SealPersonalData(sealer)
	}
	return store, nil
}

// readingSealer is the server key's sealer for a tool, or nil when none is configured.
func readingSealer(db *sqldb.DB, secretKey string) (*sealing.Sealer, error) {
	if secretKey != "" {
		keys, err := sealing.ParseKeys(secretKey)
		if err != nil {
			return nil, fmt.Errorf("app: FUNNEL_SECRET_KEY: %w", err)
		}
		return sealing.New(keys...)
	}
	if db.Dialect != sqldb.SQLite {
		return nil, nil
	}
	key, err := sealing.ReadKeyFile(db.Path() + keyFileSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("app: the server key file: %w", err)
	}
	return sealing.New(key)
}
