package api_test

import (
	"testing"

	"funnel/infra/app/apptest"
)

func TestMain(m *testing.M) { apptest.Main(m) }
