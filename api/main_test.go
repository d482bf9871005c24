package api_test

import (
	"testing"

	"github.com/funnelhq/funnel/app/apptest"
)

func TestMain(m *testing.M) { apptest.Main(m) }
