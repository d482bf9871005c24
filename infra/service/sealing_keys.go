package service

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// A rotation (README "Rotating the server key") lists the new key first everywhere; a process
// that starts again with the list of before it (FUNNEL_SECRET_KEY=OLD,NEW: an orchestrator
// restarting it with its old settings) would seal with OLD, and at its start seal every person's
// key and every signing secret back with OLD, while the processes on NEW,OLD seal them forward
// again: they would pass them back and forth, and a key left sealed with OLD when OLD is dropped
// opens no more. The database keeps the order in which keys first sealed (sealing_keys, migration
// 28), so such a process seals with the newest key it lists instead, and says so. Decision: a key
// another key replaced never seals again while that key is listed; to go back, make a new key.

// sealingKeyAfterRotations returns sealer, or, when sealer's first key was replaced by another
// key it also lists, a sealer that seals with the newest of them. It records the key it seals
// with when that key never sealed before.
func sealingKeyAfterRotations(ctx context.Context, db *sqldb.DB, sealer *sealing.Sealer, now time.Time, log *zap.Logger) (*sealing.Sealer, error) {
	firstSealed, err := readSealingKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	ids := sealer.KeyIDs()
	sealsWith := newestSealingKey(ids, firstSealed)
	if sealsWith != ids[0] {
		log.Warn("FUNNEL_SECRET_KEY lists first a server key that a newer one it also lists replaced: sealing with the newer one "+
			"(list it first, as every other process does)", zap.String("listedFirst", ids[0]), zap.String("sealsWith", sealsWith))
		return sealer.SealingWith(sealsWith)
	}
	if _, known := firstSealed[sealsWith]; !known {
		if _, err := db.Write.ExecContext(ctx, `INSERT INTO sealing_keys (key_id, first_sealed_at) VALUES ($1, $2) ON CONFLICT (key_id) DO NOTHING`,
			sealsWith, now.UnixMilli()); err != nil {
			return nil, fmt.Errorf("app: record the server key that seals: %w", err)
		}
	}
	return sealer, nil
}

// newestSealingKey is the key to seal with of the configured ids (the first is the one listed
// first): the first, unless another of them first sealed after it did.
func newestSealingKey(ids []string, firstSealed map[string]int64) string {
	newest := ids[0]
	since, sealed := firstSealed[newest]
	if !sealed {
		return newest // a new key: this is the rotation to it
	}
	for _, id := range ids[1:] {
		if at, ok := firstSealed[id]; ok && at > since {
			newest, since = id, at
		}
	}
	return newest
}

// readSealingKeys reads when each key that sealed first sealed.
func readSealingKeys(ctx context.Context, db *sqldb.DB) (map[string]int64, error) {
	rows, err := db.Read.QueryContext(ctx, `SELECT key_id, first_sealed_at FROM sealing_keys`)
	if err != nil {
		return nil, fmt.Errorf("app: read the server keys that sealed: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var at int64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("app: read the server keys that sealed: %w", err)
		}
		out[id] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("app: read the server keys that sealed: %w", err)
	}
	return out, nil
}
