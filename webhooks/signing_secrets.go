package webhooks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// KeyedSealer is a Sealer that tells which key seals (the first of FUNNEL_SECRET_KEY): a value
// sealed with another is sealed again with it.
type KeyedSealer interface {
	Sealer
	KeyIDs() []string
}

// sealSecret is a subscription's signing secret as the read model keeps it: sealed with the
// server key's first key, bound to the subscription (domain.WebhookSecretSealing). sealed is the
// log's sealed copy (opened and sealed again, so that after a key rotation the read model holds
// it under the new key), plain a secret the log kept in the clear (schema version 1). An empty
// secret stays empty. A sealed copy that no configured key opens is kept as it is, still sealed:
// the projector goes on, and the dispatcher fails that subscription's deliveries, saying why.
func sealSecret(sealer Sealer, subscriptionID, sealed, plain string) (string, error) {
	ad := domain.WebhookSecretSealing(subscriptionID)
	if sealed != "" {
		opened, err := sealer.Open(sealed, ad)
		if err != nil {
			return sealed, nil
		}
		plain = string(opened)
	}
	if plain == "" {
		return "", nil
	}
	out, err := sealer.Seal([]byte(plain), ad)
	if err != nil {
		return "", fmt.Errorf("webhooks: seal the signing secret of %s: %w", subscriptionID, err)
	}
	return out, nil
}

// openSecret opens a signing secret the read model keeps sealed ("" stays "").
func openSecret(opener Opener, subscriptionID, sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	plain, err := opener.Open(sealed, domain.WebhookSecretSealing(subscriptionID))
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// SealSubscriptionSecrets seals the signing secrets the webhook read model holds in the clear
// (rows written before secrets were sealed: secrets_sealed = 0), and seals again with the first
// key those sealed with another one (older_secrets included, whose ended secrets it drops) (after FUNNEL_SECRET_KEY=NEW,OLD), so that OLD can be dropped
// later without losing a subscription. serve runs it at start, before the dispatcher; it is
// idempotent, and cheap when there is nothing to do. A secret that no configured key opens is
// left as it is: its deliveries fail, saying why, until its key is configured again.
func SealSubscriptionSecrets(ctx context.Context, db *sqldb.DB, sealer KeyedSealer) (int, error) {
	current := "v1." + sealer.KeyIDs()[0] + "."
	rows, err := db.Write.QueryContext(ctx, `SELECT id, secret, previous_secret, older_secrets, secrets_sealed FROM webhook_subscriptions
		WHERE secrets_sealed = 0 OR secret NOT LIKE $1 OR (previous_secret <> '' AND previous_secret NOT LIKE $1) OR older_secrets <> ''`, current+"%")
	if err != nil {
		return 0, fmt.Errorf("webhooks: read the signing secrets to seal: %w", err)
	}
	type row struct {
		id, secret, previous, older string
		sealed                      int
	}
	var todo []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.secret, &r.previous, &r.older, &r.sealed); err != nil {
			rows.Close()
			return 0, fmt.Errorf("webhooks: scan a signing secret: %w", err)
		}
		todo = append(todo, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("webhooks: read the signing secrets to seal: %w", err)
	}
	done := 0
	for _, r := range todo {
		reseal := func(v string) (string, error) {
			if r.sealed == 1 {
				if strings.HasPrefix(v, current) || v == "" {
					return v, nil
				}
				return sealSecret(sealer, r.id, v, "")
			}
			return sealSecret(sealer, r.id, "", v)
		}
		secret, err := reseal(r.secret)
		if err != nil {
			return done, err
		}
		previous, err := reseal(r.previous)
		if err != nil {
			return done, err
		}
		older, err := resealOlder(sealer, current, r.id, r.older, time.Now())
		if err != nil {
			return done, err
		}
		if r.sealed == 1 && secret == r.secret && previous == r.previous && older == r.older {
			continue // its older secrets were all under the current key, and none has ended
		}
		// Only the row as it was read is replaced: a rotation projected meanwhile wins.
		res, err := db.Write.ExecContext(ctx, `UPDATE webhook_subscriptions SET secret = $1, previous_secret = $2, older_secrets = $3, secrets_sealed = 1
			WHERE id = $4 AND secret = $5 AND previous_secret = $6 AND older_secrets = $7 AND secrets_sealed = $8`,
			secret, previous, older, r.id, r.secret, r.previous, r.older, r.sealed)
		if err != nil {
			return done, fmt.Errorf("webhooks: seal the signing secrets of %s: %w", r.id, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			done++
		}
	}
	return done, nil
}

// resealOlder is older_secrets' text with every secret sealed with the first key (prefix current)
// and those that ended by now dropped: kept, they would only sign nothing under an old key.
func resealOlder(sealer Sealer, current, subscriptionID, text string, now time.Time) (string, error) {
	older, err := parseOlderSecrets(subscriptionID, text)
	if err != nil {
		return text, nil // left as it is; the dispatcher leaves it out, saying why
	}
	var kept []olderSecret
	for _, o := range older {
		if o.Until <= now.UnixMilli() {
			continue
		}
		if !strings.HasPrefix(o.Secret, current) {
			if o.Secret, err = sealSecret(sealer, subscriptionID, o.Secret, ""); err != nil {
				return "", err
			}
		}
		kept = append(kept, o)
	}
	return formatOlderSecrets(kept), nil
}
