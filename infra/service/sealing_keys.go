package service

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// A rotation (README "Rotating the server key") first lists the new key after the old one
// (OLD,NEW: it only opens), then first (NEW,OLD: it seals). A process that starts again with the
// list of before (FUNNEL_SECRET_KEY=OLD,NEW: an orchestrator restarting it with its old settings)
// would seal with OLD, and at its start seal every person's key and every signing secret back
// with OLD while the processes on NEW,OLD seal them forward: they would pass them back and forth,
// and whatever is left with OLD opens no more once OLD is dropped. So the database records the
// order in which keys first sealed (sealing_keys, migration 28), and each process picks the key
// it seals with from it (sealingKeyFor). Decisions: a key another key replaced never seals again
// while that key is listed (to go back, make a new key and rotate to it); a process that lacks
// the newest key refuses to start, rather than serve persons it cannot read; a key the record
// does not know is a new one, so a key from before the record began (migration 28) that a
// restart brings back first in its list becomes the newest: that is then the key every process
// must keep (the refusal says so), and a rotation to a new key leaves it.

// sealingChoice is the key a process seals with; replaced says that the key listed first was
// replaced by it, a newer key also listed.
type sealingChoice struct {
	sealsWith string
	replaced  bool
}

// sealingKeyFor picks the key to seal with among ids (the first listed first) from the order in
// which keys first sealed (seqs), or refuses: the newest key that sealed, when ids lack it, sealed
// what none of them opens.
func sealingKeyFor(ids []string, seqs map[string]int64) (sealingChoice, error) {
	first := ids[0]
	if _, sealed := seqs[first]; !sealed {
		return sealingChoice{sealsWith: first}, nil // a new key: this start rotates to it
	}
	choice := sealingChoice{sealsWith: first}
	for _, id := range ids[1:] {
		if seq, ok := seqs[id]; ok && seq > seqs[choice.sealsWith] {
			choice = sealingChoice{sealsWith: id, replaced: true}
		}
	}
	for id, seq := range seqs {
		if seq > seqs[choice.sealsWith] {
			return sealingChoice{}, fmt.Errorf("app: FUNNEL_SECRET_KEY lacks the server key %s, which replaced %s: what it sealed opens with no listed key. "+
				"List it first (to go back to an older key, make a new one and rotate to it)", id, choice.sealsWith)
		}
	}
	return choice, nil
}

// sealingKeyAfterRotations returns sealer, or a sealer of the same keys that seals with the key
// sealingKeyFor picks; it records the key it seals with when that one never sealed before.
func sealingKeyAfterRotations(ctx context.Context, db *sqldb.DB, sealer *sealing.Sealer, now time.Time, log *zap.Logger) (*sealing.Sealer, error) {
	// Two processes may give two new keys the same next seq at once: the second fails on the
	// unique seq, and reads again.
	for attempt := 1; ; attempt++ {
		seqs, err := readSealingKeys(ctx, db)
		if err != nil {
			return nil, err
		}
		ids := sealer.KeyIDs()
		choice, err := sealingKeyFor(ids, seqs)
		if err != nil {
			return nil, err
		}
		if _, sealed := seqs[choice.sealsWith]; !sealed {
			// WHERE true: SQLite would read ON CONFLICT after a bare SELECT as its join's.
			_, err = db.Write.ExecContext(ctx, `INSERT INTO sealing_keys (key_id, seq, sealed_at)
				SELECT $1, COALESCE(MAX(seq), 0) + 1, $2 FROM sealing_keys WHERE true
				ON CONFLICT (key_id) DO NOTHING`, choice.sealsWith, now.UnixMilli())
			if err != nil && attempt < 3 {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("app: record the server key that seals, %s: %w", choice.sealsWith, err)
			}
		}
		if choice.replaced {
			log.Warn("FUNNEL_SECRET_KEY lists first a server key that a newer one it also lists replaced: sealing with the newer one "+
				"(list it first, as every other process does)", zap.String("listedFirst", ids[0]), zap.String("sealsWith", choice.sealsWith))
		}
		return sealer.SealingWith(choice.sealsWith)
	}
}

// readSealingKeys reads the order in which keys first sealed, by key id.
func readSealingKeys(ctx context.Context, db *sqldb.DB) (map[string]int64, error) {
	rows, err := db.Read.QueryContext(ctx, `SELECT key_id, seq FROM sealing_keys`)
	if err != nil {
		return nil, fmt.Errorf("app: read the server keys that sealed: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, fmt.Errorf("app: read the server keys that sealed: %w", err)
		}
		out[id] = seq
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("app: read the server keys that sealed: %w", err)
	}
	return out, nil
}
