// Package sealingtest makes server keys for tests.
package sealingtest

import (
	"testing"

	"github.com/funnelhq/funnel/infra/sealing"
)

// NewKey returns a fresh random server key, as FUNNEL_SECRET_KEY holds it, and its sealer.
func NewKey(t testing.TB) (string, *sealing.Sealer) {
	t.Helper()
	text, err := sealing.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := sealing.ParseKeys(text)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sealing.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return text, s
}
