package sealing

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func newSealer(t *testing.T, texts ...string) *Sealer {
	t.Helper()
	keys, err := ParseKeys(strings.Join(texts, ","))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newKeyText(t *testing.T) string {
	t.Helper()
	text, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return text
}

var purpose = []byte("activation token\x00act_1")

func TestSealedValuesOpenOnlyAsSealed(t *testing.T) {
	s := newSealer(t, newKeyText(t))
	secret := []byte("the-token")
	sealed, err := s.Seal(secret, purpose)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sealed, "v1."+s.KeyIDs()[0]+".") || strings.Contains(sealed, "the-token") {
		t.Fatalf("sealed = %q", sealed)
	}
	if again, _ := s.Seal(secret, purpose); again == sealed {
		t.Fatal("two seals of one secret are equal: the nonce is not fresh")
	}
	if got, err := s.Open(sealed, purpose); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open = %q, %v", got, err)
	}

	// Other associated data: the same value sealed for another activation does not open.
	if _, err := s.Open(sealed, []byte("activation token\x00act_2")); !errors.Is(err, ErrNotAuthentic) {
		t.Fatalf("open with other associated data: %v", err)
	}
	// Any byte changed in the ciphertext, nonce or tag: not authentic.
	prefix, body, _ := strings.Cut(sealed[3:], ".")
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	for _, i := range []int{0, 11, 12, len(raw) - 1} {
		tampered := bytes.Clone(raw)
		tampered[i] ^= 1
		if _, err := s.Open("v1."+prefix+"."+base64.RawURLEncoding.EncodeToString(tampered), purpose); !errors.Is(err, ErrNotAuthentic) {
			t.Fatalf("byte %d changed: %v", i, err)
		}
	}
	// Cut short, or not a sealed value at all.
	for _, bad := range []string{"", "the-token", "v2." + sealed[3:], "v1." + prefix, "v1." + prefix + ".!!", "v1." + prefix + "." + base64.RawURLEncoding.EncodeToString(raw[:20])} {
		if _, err := s.Open(bad, purpose); !errors.Is(err, ErrMalformed) {
			t.Fatalf("open %q: %v", bad, err)
		}
	}
}

func TestUnknownKeysAreNamedByIDAndRotationOpensOldValues(t *testing.T) {
	oldText, newText := newKeyText(t), newKeyText(t)
	old := newSealer(t, oldText)
	sealed, err := old.Seal([]byte("secret"), purpose)
	if err != nil {
		t.Fatal(err)
	}

	// A sealer without the old key says which key it lacks, and never shows a key.
	other := newSealer(t, newText)
	_, err = other.Open(sealed, purpose)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), old.KeyIDs()[0]) || strings.Contains(err.Error(), oldText) || strings.Contains(err.Error(), newText) {
		t.Fatalf("open with another key: %v", err)
	}
	// A value whose key id was swapped for another key's does not open either.
	swapped := "v1." + other.KeyIDs()[0] + sealed[len("v1.")+8:]
	if _, err := newSealer(t, newText, oldText).Open(swapped, purpose); !errors.Is(err, ErrNotAuthentic) {
		t.Fatalf("open with a swapped key id: %v", err)
	}

	// Rotated: the new key seals, the old one still opens.
	rotated := newSealer(t, newText, oldText)
	if got, err := rotated.Open(sealed, purpose); err != nil || string(got) != "secret" {
		t.Fatalf("open an old value after rotation: %q, %v", got, err)
	}
	fresh, err := rotated.Seal([]byte("secret"), purpose)
	if err != nil || !strings.HasPrefix(fresh, "v1."+other.KeyIDs()[0]+".") {
		t.Fatalf("a rotated sealer seals %q (%v), want the new key %s", fresh, err, other.KeyIDs()[0])
	}
	if _, err := old.Open(fresh, purpose); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("the old sealer opens a value of the new key: %v", err)
	}
}

func TestKeysAreBase64Of32BytesInEitherAlphabet(t *testing.T) {
	raw := bytes.Repeat([]byte{0xfb, 0xff}, 16) // encodes with + and / in the standard alphabet
	std, url := base64.StdEncoding.EncodeToString(raw), base64.URLEncoding.EncodeToString(raw)
	var ids []string
	for _, text := range []string{std, url, strings.TrimRight(std, "="), strings.TrimRight(url, "="), " " + std + "\n"} {
		k, err := ParseKey(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		ids = append(ids, k.ID())
	}
	for _, id := range ids {
		if id != ids[0] || len(id) != 8 {
			t.Fatalf("ids of one key in its spellings: %v", ids)
		}
	}
	short := base64.StdEncoding.EncodeToString(raw[:16])
	for _, bad := range []string{"", "not base64!", short} {
		_, err := ParseKey(bad)
		if err == nil || (bad != "" && strings.Contains(err.Error(), bad)) {
			t.Fatalf("key %q: %v", bad, err)
		}
	}
	if _, err := ParseKeys(std + "," + url); err == nil || !strings.Contains(err.Error(), "key 2 of the list is key 1 again") {
		t.Fatalf("a key listed twice: %v", err)
	}
	if _, err := ParseKeys(std + ","); err == nil || !strings.Contains(err.Error(), "key 2 of the list") {
		t.Fatalf("an empty key in the list: %v", err)
	}
}

func TestKeyFileIsCreatedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "funnel.db.key")
	first, created, err := KeyFile(path)
	if err != nil || !created {
		t.Fatalf("first: created %v, %v", created, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", info.Mode(), err)
	}
	again, created, err := KeyFile(path)
	if err != nil || created || again.ID() != first.ID() {
		t.Fatalf("second: created %v, id %s want %s, %v", created, again.ID(), first.ID(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files left beside the key: %v", entries)
	}

	// A damaged key file is an error, and stays as it is: a new key would open nothing sealed.
	if err := os.WriteFile(path, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := KeyFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("damaged key file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "damaged" {
		t.Fatalf("the damaged key file was rewritten: %q", b)
	}
}

// Processes starting at once on one new file all end up with the one key that was written.
func TestKeyFileCreatedByConcurrentStartsHoldsOneKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "funnel.db.key")
	ids := make([]string, 8)
	creators := make([]bool, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			k, created, err := KeyFile(path)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], creators[i] = k.ID(), created
		})
	}
	wg.Wait()
	n := 0
	for i := range ids {
		if ids[i] != ids[0] {
			t.Fatalf("keys %v", ids)
		}
		if creators[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d starts created the key file", n)
	}
}

// BenchmarkSealAndOpen seals and opens a checkout.purchased body of about 1 KB, as the projector
// and the dispatcher do once per delivery (and a purchase once for its token).
func BenchmarkSealAndOpen(b *testing.B) {
	s, err := New(parsedKey(b))
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 1024)
	ad := []byte("funnel webhook delivery body\x00dlv_1")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		sealed, err := s.Seal(body, ad)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Open(sealed, ad); err != nil {
			b.Fatal(err)
		}
	}
}

// A sealer made to seal with another of its keys seals with that one, and still opens what the
// others sealed.
func TestSealingWithAnotherKey(t *testing.T) {
	first, second := parsedKey(t), parsedKey(t)
	s, err := New(first, second)
	if err != nil {
		t.Fatal(err)
	}
	sealedByFirst, err := s.Seal([]byte("before"), nil)
	if err != nil {
		t.Fatal(err)
	}
	swapped, err := s.SealingWith(second.ID())
	if err != nil {
		t.Fatal(err)
	}
	if ids := swapped.KeyIDs(); len(ids) != 2 || ids[0] != second.ID() || ids[1] != first.ID() {
		t.Fatalf("key ids = %v, want %s then %s", ids, second.ID(), first.ID())
	}
	sealed, err := swapped.Seal([]byte("after"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sealed, "v1."+second.ID()+".") {
		t.Errorf("sealed with %q, want the second key %s", sealed, second.ID())
	}
	if plain, err := swapped.Open(sealedByFirst, nil); err != nil || string(plain) != "before" {
		t.Errorf("what the first key sealed opens as %q, %v", plain, err)
	}
	if same, err := s.SealingWith(first.ID()); err != nil || same != s {
		t.Errorf("sealing with the key that already seals = %v, %v; want the sealer itself", same, err)
	}
	if _, err := s.SealingWith("00000000"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("sealing with a key it lacks: %v, want ErrUnknownKey", err)
	}
}

// parsedKey is a fresh random key.
func parsedKey(t testing.TB) Key {
	t.Helper()
	text, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseKey(text)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
