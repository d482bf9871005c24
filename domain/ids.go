package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"
)

// ids are lower-case base32 without padding: URL-safe, case-insensitive-safe, 26 characters for 128 bits.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random identifier with a resource prefix, such as "acc_…" or "key_…".
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return prefix + "_" + idEncoding.EncodeToString(b[:])
}

// derivedID names an entity whose identity is a natural key inside an account. Two requests that
// name the same key reach the same stream, so the stream's expected version makes the key unique
// under any concurrency without an index or a read model. The account id (random, never shown to
// other accounts) is part of the hash, so ids differ across accounts and cannot be guessed from the key.
func derivedID(prefix, accountID, kind, key string) string {
	sum := sha256.Sum256([]byte(accountID + "\x00" + kind + "\x00" + key))
	return prefix + "_" + idEncoding.EncodeToString(sum[:16])
}

// ContactIDFor is the id of the one contact an account can have for an email.
func ContactIDFor(accountID, email string) string {
	return derivedID("ct", accountID, "contact", EmailKey(email))
}

// ContactIDAfterErasures is the id of an email's contact once its first n contacts were erased
// (n > 0): a later upsert of the email is a new contact, with a new id and nothing of the old
// one's (decisions.md, "Erasure").
func ContactIDAfterErasures(accountID, email string, n int) string {
	return derivedID("ct", accountID, "contact", EmailKey(email)+"\x00"+strconv.Itoa(n))
}

// MaxErasures bounds how many erased contacts of one email a look-up steps over.
const MaxErasures = 1000

// CurrentContactID is the contact of an email in an account, as every look-up by email finds it
// (the commands, the operator's history): the contact created under the email's old key, when
// the normalisation changed it and that contact exists (LegacyContactIDFor), else ContactIDFor;
// and, while that one was erased, the email's next (ContactIDAfterErasures), so that an erased
// contact is never found by its email again. exists tells whether a contact exists (asked only of
// the old key's); erased whether one was erased (nil: no contact ever was). It returns the id and
// how many contacts of the email were erased before it. When every contact of the email was
// erased, the id is that of the next, which does not exist yet.
func CurrentContactID(accountID, email string, exists, erased func(contactID string) (bool, error)) (string, int, error) {
	id := ContactIDFor(accountID, email)
	if legacy, changed := LegacyContactIDFor(accountID, email); changed {
		found, err := exists(legacy)
		if err != nil {
			return "", 0, err
		}
		if found {
			id = legacy
		}
	}
	if erased == nil {
		return id, 0, nil
	}
	for n := 1; n <= MaxErasures; n++ {
		gone, err := erased(id)
		if err != nil || !gone {
			return id, n - 1, err
		}
		id = ContactIDAfterErasures(accountID, email, n)
	}
	return "", 0, Conflict("this email's contact was erased too many times")
}

// CustomerIDAfterErasures is ContactIDAfterErasures for the customer of an email.
func CustomerIDAfterErasures(accountID, email string, n int) string {
	return derivedID("cus", accountID, "customer", EmailKey(email)+"\x00"+strconv.Itoa(n))
}

// LegacyContactIDFor is the id an email's contact had before emails were compared by EmailKey,
// and whether it differs from ContactIDFor (EmailKeyChanged). Such a contact, if it exists,
// stays the contact of that email: look-ups try it first (commands.Repository.contactIDFor).
func LegacyContactIDFor(accountID, email string) (string, bool) {
	return derivedID("ct", accountID, "contact", legacyEmailKey(email)), EmailKeyChanged(email)
}

// TagIDFor is the id of the one tag an account can have with a name.
func TagIDFor(accountID, name string) string {
	return derivedID("tag", accountID, "tag", NameKey(name))
}

// NameKey is how names are compared: trimmed and case-insensitive.
func NameKey(name string) string {
	return strings.ToLower(strings.TrimSpace(name))
}

// IsContactID tells whether id has the shape of a contact id, before any stream is read for it.
func IsContactID(id string) bool {
	return strings.HasPrefix(id, "ct_") && len(id) == len("ct_")+26
}
