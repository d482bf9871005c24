package webhooks

import (
	"errors"

	"github.com/funnelhq/funnel/domain"
)

// Opener opens what is kept sealed with the server key (infra/sealing): a purchase's activation
// token in the log, which checkout.purchased hands over.
type Opener interface {
	Open(sealed string, associatedData []byte) ([]byte, error)
}

// Sealer seals and opens with the server key. The projector seals the body of a delivery whose
// payload carries a secret (an activation token) before it writes it to the outbox, and the
// dispatcher opens it when it claims the delivery: the outbox never holds the secret in the
// clear, through every retry.
type Sealer interface {
	Opener
	Seal(plaintext, associatedData []byte) (string, error)
}

// errNotOpened marks a secret that the configured keys could not open: its key was rotated out
// of FUNNEL_SECRET_KEY, or lost with a SQLite key file, or the value was altered. The delivery
// that needed it fails, with the reason, and nothing else stops.
var errNotOpened = errors.New("could not be opened with the configured keys (FUNNEL_SECRET_KEY)")

// bodySealing is the associated data of a delivery's sealed body: it opens as that delivery's
// body only.
func bodySealing(deliveryID string) []byte {
	return []byte("funnel webhook delivery body\x00" + deliveryID)
}

// redacting opens every sealed secret to domain.RedactedSecret: a sample shows a payload as it
// was delivered but never hands out a secret, and needs no key.
type redacting struct{}

func (redacting) Open(string, []byte) ([]byte, error) { return []byte(domain.RedactedSecret), nil }
