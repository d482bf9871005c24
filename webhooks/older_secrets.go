package webhooks

import (
	"encoding/json"
	"fmt"
)

// maxOlderSecrets bounds the secrets kept signing beside the current and the previous one: an
// operator rotating again and again within a day would otherwise make every delivery carry a
// signature per rotation. With it at most six secrets sign (docs/webhooks.md).
const maxOlderSecrets = 4

// olderSecret is a secret replaced before the previous one, signing until Until (unix ms).
type olderSecret struct {
	Secret string `json:"secret"`
	Until  int64  `json:"until"`
}

// parseOlderSecrets reads older_secrets ("" for none).
func parseOlderSecrets(subscriptionID, text string) ([]olderSecret, error) {
	if text == "" {
		return nil, nil
	}
	var out []olderSecret
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("webhooks: older signing secrets of %s: %w", subscriptionID, err)
	}
	return out, nil
}

// formatOlderSecrets is older_secrets' text for secrets ("" for none).
func formatOlderSecrets(secrets []olderSecret) string {
	if len(secrets) == 0 {
		return ""
	}
	text, _ := json.Marshal(secrets) // strings and numbers: never fails
	return string(text)
}

// afterRotation is the older secrets once a rotation at (unix ms) replaced the secret: the
// previous one, while it still signed then, first, and those of older that still did, newest
// first and at most maxOlderSecrets.
func afterRotation(at int64, previous string, previousUntil int64, older []olderSecret) []olderSecret {
	var out []olderSecret
	if previous != "" && previousUntil > at {
		out = append(out, olderSecret{Secret: previous, Until: previousUntil})
	}
	for _, o := range older {
		if o.Until > at && len(out) < maxOlderSecrets {
			out = append(out, o)
		}
	}
	return out
}
