package idempotency

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// A kept answer may hold what an API shows once: an API key, a webhook signing secret, an
// activation token. The table keeps it sealed (AES-256-GCM) with a key derived from the
// Idempotency-Key, which the table does not hold (only its SHA-256): a copy of the database
// does not give these secrets away, as long as the keys are not guessable (a UUID is not).

// sealerFor returns the cipher of one Idempotency-Key of one scope.
func sealerFor(scope, key string) (cipher.AEAD, error) {
	secret, err := hkdf.Key(sha256.New, []byte(key), []byte(scope), "funnel idempotency-key answer", 32)
	if err != nil {
		return nil, fmt.Errorf("idempotency: derive the sealing key: %w", err)
	}
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, fmt.Errorf("idempotency: cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("idempotency: cipher: %w", err)
	}
	return aead, nil
}

// seal encrypts plain; what names the column it goes to, so that one column's text cannot be
// passed off as another's.
func seal(aead cipher.AEAD, what string, plain []byte) string {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (it aborts the program instead)
	return base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(what)))
}

// open decrypts what seal made.
func open(aead cipher.AEAD, what, sealed string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < aead.NonceSize() {
		return nil, fmt.Errorf("idempotency: kept %s is not sealed text", what)
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(what))
	if err != nil {
		return nil, fmt.Errorf("idempotency: open kept %s: %w", what, err)
	}
	return plain, nil
}
