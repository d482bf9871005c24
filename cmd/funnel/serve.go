package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/urfave/cli/v3"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/service"
)

var serveCommand = &cli.Command{
	Name:   "serve",
	Usage:  "run the API and operator listeners, the projections and the webhook workers",
	Before: noArguments,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "demo", Usage: "on an empty store, create a demo account with sample data and print its API key"},
	},
	Action: func(ctx context.Context, cmd *cli.Command) error {
		if err := refuseEmptyVariables(cmd); err != nil {
			return err
		}
		cfg := configFrom(cmd)
		if err := cfg.Validate(); err != nil { // before the logger: its level is one of the settings
			return err
		}
		log, err := newLogger(cfg.LogLevel)
		if err != nil {
			return err
		}
		defer log.Sync()
		generated := cfg.AdminToken == ""
		if generated {
			cfg.AdminToken = randomToken()
		}
		a, err := service.Open(ctx, cfg, log)
		if err != nil {
			return err
		}
		if generated { // printed once the service can start: a refused start shows no token
			fmt.Printf("operator token (FUNNEL_ADMIN_TOKEN was not set): %s\n", cfg.AdminToken)
		}
		defer a.Close()
		ln, err := a.Listen()
		if err != nil {
			return err
		}
		if cmd.Bool("demo") && ln.API == nil {
			return fmt.Errorf("serve: --demo needs the API listener, which a worker does not open (FUNNEL_ROLE %s)", cfg.Role)
		}
		if cmd.Bool("demo") {
			go func() {
				if err := seedDemo(ctx, a, cfg, ln.API.Addr().String()); err != nil {
					log.Error("demo data", zap.Error(err))
				}
			}()
		}
		return a.Serve(ctx, ln)
	},
}

func randomToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
