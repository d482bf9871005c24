package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// apiKeyPrefix marks funnel keys, so that secret scanners and people can tell them apart.
const apiKeyPrefix = "fnl_"

// NewAPIKeySecret returns a fresh secret (256 bits from the CSPRNG) and the hash that is stored.
func NewAPIKeySecret() (secret, hash string) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret = apiKeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashAPIKey(secret)
}

// HashAPIKey is how a presented key is looked up. A plain SHA-256 suffices: the secret has 256
// bits of entropy, so there is nothing for a slow password hash to protect.
func HashAPIKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
