package service_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// SQLite mode is one process: a second service on one file refuses to start with an error that
// names the file and the pid holding it, and one starts again once the first has stopped.
// PostgreSQL is shared by many processes: there both start.
func TestOneServicePerSQLiteFile(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		cfg := service.Defaults()
		cfg.DatabaseURL = sqldbtest.URL(t, d)
		cfg.SecretKey = servicetest.SecretKey(cfg.DatabaseURL)
		first, err := service.Open(ctx, cfg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		second, err := service.Open(ctx, cfg, zap.NewNop())
		if d == sqldb.Postgres {
			if err != nil {
				t.Fatalf("a second service on PostgreSQL: %v", err)
			}
			second.Close()
			first.Close()
			return
		}
		want := fmt.Sprintf("%s is already served by another process (pid %d)", cfg.DatabaseURL, os.Getpid())
		if err == nil || !strings.Contains(err.Error(), want) {
			if err == nil {
				second.Close()
			}
			t.Fatalf("a second service on one SQLite file: %v, want an error with %q", err, want)
		}
		first.Close()
		third, err := service.Open(ctx, cfg, zap.NewNop())
		if err != nil {
			t.Fatalf("a service after the first stopped: %v", err)
		}
		third.Close()
	})
}

// A start logs, at info, each migration it applied, or that the schema was up to date.
func TestOpenLogsTheMigrationsItApplied(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		cfg := service.Defaults()
		cfg.DatabaseURL = sqldbtest.URL(t, d)
		cfg.SecretKey = servicetest.SecretKey(cfg.DatabaseURL)
		// Every migration of the binary: the SQL files and the one written in Go.
		want, err := sqldb.MigrationNames()
		if err != nil {
			t.Fatal(err)
		}
		version, err := strconv.Atoi(strings.SplitN(want[len(want)-1], "_", 2)[0])
		if err != nil {
			t.Fatal(err)
		}

		for run, expect := range []string{"applied " + strings.Join(want, ", applied "), fmt.Sprintf("schema already up to date at version %d", version)} {
			core, logs := observer.New(zap.InfoLevel)
			a, err := service.Open(ctx, cfg, zap.New(core))
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			var said []string
			for _, e := range logs.All() {
				switch e.Message {
				case "applied migration":
					said = append(said, "applied "+e.ContextMap()["migration"].(string))
				case "schema already up to date":
					said = append(said, fmt.Sprintf("schema already up to date at version %d", e.ContextMap()["version"]))
				}
			}
			if got := strings.Join(said, ", "); got != expect {
				t.Errorf("start %d logged %q, want %q", run+1, got, expect)
			}
		}
	})
}
