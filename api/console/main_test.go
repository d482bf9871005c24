package console_test

import (
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func TestMain(m *testing.M) { servicetest.Main(m) }
