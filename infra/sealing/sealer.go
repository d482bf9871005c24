// Package sealing keeps secrets that the database must hold but must not reveal (an activation
// token in the event log, a webhook body that carries one in the outbox): it seals them with a
// server key kept outside the database (FUNNEL_SECRET_KEY, or the key file beside a SQLite
// database), with AES-256-GCM from the standard library. A sealed value reads
//
//	v1.<key id>.<base64url(nonce | ciphertext and tag)>
//
// The key id names the key that sealed it, so that a value sealed before a rotation opens with
// the old key while new values are sealed with the new one. The caller's associated data binds a
// sealed value to its purpose and its subject (an activation id, a delivery id): sealed for one,
// it does not open as another.
package sealing

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// version is the format of sealed values this package writes; it is part of what they
// authenticate.
const version = "v1"

// KeySize is the length of a key: AES-256.
const KeySize = 32

var (
	// ErrUnknownKey is returned for a value sealed with a key the sealer does not hold: one
	// rotated out of the key list, or a lost key file replaced by a new one.
	ErrUnknownKey = errors.New("sealing: sealed with a key that is not configured")
	// ErrNotAuthentic is returned for a value that was altered, or that was sealed for other
	// associated data.
	ErrNotAuthentic = errors.New("sealing: the sealed value is not authentic")
	// ErrMalformed is returned for a value that is not a sealed value of a known version.
	ErrMalformed = errors.New("sealing: not a sealed value")
)

// Key is one AES-256 key and its id: the first 8 hex digits of the SHA-256 of the key, which
// names the key in sealed values and in messages without revealing it.
type Key struct {
	id   string
	aead cipher.AEAD
}

// ID is the key's id.
func (k Key) ID() string { return k.id }

// NewKey returns the base64 text of a fresh random key, as FUNNEL_SECRET_KEY and the key file
// hold it (the same as `openssl rand -base64 32`).
func NewKey() (string, error) {
	var b [KeySize]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("sealing: new key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b[:]), nil
}

// ParseKey reads a key written in base64, standard or URL alphabet, padded or not. It must be
// 32 bytes. Errors never quote the text: it is a secret.
func ParseKey(text string) (Key, error) {
	text = strings.TrimSpace(text)
	var raw []byte
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(text); err == nil {
			raw = b
			break
		}
	}
	switch {
	case text == "":
		return Key{}, errors.New("sealing: empty key")
	case raw == nil:
		return Key{}, errors.New("sealing: a key must be written in base64 (make one with: openssl rand -base64 32)")
	case len(raw) != KeySize:
		return Key{}, fmt.Errorf("sealing: a key must be %d random bytes, this one is %d (make one with: openssl rand -base64 32)", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return Key{}, fmt.Errorf("sealing: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, fmt.Errorf("sealing: %w", err)
	}
	sum := sha256.Sum256(raw)
	return Key{id: hex.EncodeToString(sum[:4]), aead: aead}, nil
}

// ParseKeys reads a comma-separated list of keys: the first seals, every one opens. A key listed
// twice is refused, as is an empty list.
func ParseKeys(list string) ([]Key, error) {
	var keys []Key
	seen := map[string]int{}
	for i, text := range strings.Split(list, ",") {
		k, err := ParseKey(text)
		if err != nil {
			return nil, fmt.Errorf("key %d of the list: %w", i+1, err)
		}
		if j, dup := seen[k.id]; dup {
			return nil, fmt.Errorf("key %d of the list is key %d again (id %s)", i+1, j, k.id)
		}
		seen[k.id] = i + 1
		keys = append(keys, k)
	}
	return keys, nil
}

// Sealer seals with its first key and opens with any of them. It is safe for concurrent use.
type Sealer struct {
	keys []Key // keys[0] seals
	byID map[string]Key
}

// New returns a sealer of keys: keys[0] seals, every key opens (a rotation lists the new key
// first and the old ones after it, until nothing sealed with them is needed any more).
func New(keys ...Key) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("sealing: no key")
	}
	s := &Sealer{keys: keys, byID: map[string]Key{}}
	for _, k := range keys {
		if k.aead == nil {
			return nil, errors.New("sealing: a key that was not parsed (use ParseKey)")
		}
		s.byID[k.id] = k
	}
	return s, nil
}

// SealingWith returns a sealer of the same keys that seals with the key of id (the others open,
// in their order), or s itself when that key already seals. id must be one of s's keys.
func (s *Sealer) SealingWith(id string) (*Sealer, error) {
	if s.keys[0].id == id {
		return s, nil
	}
	k, known := s.byID[id]
	if !known {
		return nil, fmt.Errorf("%w: key id %s (the configured keys are %s)", ErrUnknownKey, id, strings.Join(s.KeyIDs(), ", "))
	}
	keys := []Key{k}
	for _, other := range s.keys {
		if other.id != id {
			keys = append(keys, other)
		}
	}
	return New(keys...)
}

// KeyIDs are the ids of the sealer's keys, the sealing one first.
func (s *Sealer) KeyIDs() []string {
	ids := make([]string, len(s.keys))
	for i, k := range s.keys {
		ids[i] = k.id
	}
	return ids
}

// Seal encrypts and authenticates plaintext, bound to associatedData, with a fresh random nonce.
// (A random 96-bit nonce keeps a key safe for about 2^32 seals: rotate long before.)
func (s *Sealer) Seal(plaintext, associatedData []byte) (string, error) {
	k := s.keys[0]
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("sealing: nonce: %w", err)
	}
	header := version + "." + k.id + "."
	sealed := k.aead.Seal(nonce, nonce, plaintext, authenticated(header, associatedData))
	return header + base64.RawURLEncoding.EncodeToString(sealed), nil
}

// Open returns the plaintext of a sealed value if it was sealed, unaltered, for associatedData,
// with one of the sealer's keys. Its errors wrap ErrMalformed, ErrUnknownKey or ErrNotAuthentic
// and name the key id, never the key.
func (s *Sealer) Open(sealed string, associatedData []byte) ([]byte, error) {
	v, rest, ok := strings.Cut(sealed, ".")
	if !ok || v != version {
		return nil, ErrMalformed
	}
	id, body, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, ErrMalformed
	}
	k, known := s.byID[id]
	if !known {
		return nil, fmt.Errorf("%w: key id %s (the configured keys are %s)", ErrUnknownKey, id, strings.Join(s.KeyIDs(), ", "))
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < k.aead.NonceSize()+k.aead.Overhead() {
		return nil, ErrMalformed
	}
	nonce, ciphertext := raw[:k.aead.NonceSize()], raw[k.aead.NonceSize():]
	plaintext, err := k.aead.Open(nil, nonce, ciphertext, authenticated(version+"."+id+".", associatedData))
	if err != nil {
		return nil, fmt.Errorf("%w (key id %s)", ErrNotAuthentic, id)
	}
	return plaintext, nil
}

// authenticated is what GCM authenticates beside the ciphertext: the value's header (version and
// key id, so that neither can be swapped) and the caller's associated data.
func authenticated(header string, associatedData []byte) []byte {
	return append([]byte(header), associatedData...)
}
