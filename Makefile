# The two commands of README.md: `go run ./cmd/funnel serve` and `make test`.
GO ?= go

.PHONY: test bench build vet load generate browser screenshots

# Every test, on SQLite and on PostgreSQL (FUNNEL_TEST_DATABASE_URL, default
# postgres://postgres@127.0.0.1:5432/test, trust auth): each test creates a database of its own
# there and drops it. pgcheck creates that `test` database first if the server lacks it. Without
# a server the PostgreSQL half is skipped, and pgcheck says so loudly before and after the run;
# with CI=true a missing PostgreSQL stops the run instead.
# gotestsum (pinned in go.mod's tool directive) prints a line per package and, at the end, the
# output of every failed test; the run then ends with one line from cmd/testcount,
# "N passed, N failed, N skipped", where every test counts, subtests included (a test of both
# stores is three), and a package that fails outside any test (a build error) is one failed.
# The exit status is non-zero when anything failed. PKGS narrows the run (make test PKGS=./webhooks/...).
# Three packages at a time (-p 3), one more than the two cores: the tests mostly wait (processes
# starting, receivers, timeouts), and the suite used a third of the machine's CPU at -p 2. On a
# 2-core VM, 2026-11-28: 9m12s at -p 2, 7m16s at -p 3, both all passed.
# Connections: a test's database caps each of its pools at 8 (sqldbtest.TestPoolCap), 16 a
# process; creating a database waits while the server answers "too many clients" (53300). Peak
# sampled from pg_stat_activity every 0.5 s over the suite: 29 connections at -p 2, 51 at -p 3,
# below PostgreSQL's stock max_connections of 100 (a test of three processes on one database
# can open at most 48; with -p N packages, at most about N x 48).
PKGS ?= ./...
test: browser
	$(GO) mod tidy -diff
	$(GO) vet ./...
	@$(GO) run ./infra/sqldb/sqldbtest/pgcheck
	@json=$$(mktemp); status=0; \
	$(GO) tool gotestsum --format pkgname --hide-summary=skipped --jsonfile $$json \
		--raw-command -- $(GO) test -json -count=1 -p 3 -timeout 20m $(PKGS) || status=$$?; \
	$(GO) run ./infra/sqldb/sqldbtest/pgcheck --after; \
	$(GO) run ./cmd/testcount $$json || status=$$?; \
	rm -f $$json; exit $$status

# The console's browser tests (api/console) need Debian's chromium: installed here when missing
# (as root, with apt-get); without it they skip, and in CI (CI=true) the run stops instead.
browser:
	@.ci/install-chromium

# The console's screenshots in docs/console/, shown in the README: the browser test on SQLite
# takes them on the demo data when FUNNEL_CONSOLE_SCREENSHOTS is set (a plain test run writes none,
# so it leaves the tree clean). Commit what changed.
screenshots: browser
	FUNNEL_CONSOLE_SCREENSHOTS=1 $(GO) test -count=1 -run 'TestConsoleInChromium/sqlite' ./api/console/

build:
	$(GO) build -o funnel ./cmd/funnel

# What the service serves from the OpenAPI documents: the lists of outbound events in the YAML
# sources from the table of webhooks/events.go, api/openapi/integration.json and operator.json
# from their YAML sources, and llms-full.txt from integration.yaml and the prose of
# llms-full.txt.tmpl, and the generated parts of two docs (docs/webhooks.md's table of events,
# docs/operator-api.md's index of routes); then, from integration.json, with the oapi-codegen pinned in go.mod's tool
# directive, the wire types (api/wire/models.gen.go) and the Go client (client/client.gen.go).
# The documents come first: the Go types are generated from them. Run it after editing any of them (a test fails
# until you do).
# The operator API's wire types (api/wire/admin/models.gen.go) come from operator.json, after it.
generate:
	$(GO) generate ./api/openapi/
	$(GO) generate ./api/wire/ ./client/
	$(GO) generate ./api/wire/admin/

vet:
	$(GO) mod tidy -diff
	$(GO) vet ./...

# Benchmarks (Go benchmarks, then the HTTP load script, which measures a one-row pgbench insert
# and shows every rate, the Go benchmarks' too, as a ratio to it). Not part of `make test`.
# FUNNEL_BENCH_REBUILD_EVENTS sizes BenchmarkRebuild's log (default 40,000).
# FUNNEL_BENCH_FEED_EVENTS (default 40,000) and FUNNEL_BENCH_REPLAY_EVENTS (default 10,000)
# size BenchmarkEventFeed's and BenchmarkReplay's logs: the defaults fit the timeout below; the
# sizes issue 24 asks for (1,000,000 and 100,000) are for a run of their own.
bench:
	@out=$$(mktemp); \
	{ $(GO) test -run '^$$' -bench . -benchtime 3s -timeout 30m ./...; echo $$? > $$out.status; } | tee $$out; \
	$(GO) run ./cmd/loadtest -gobench $$out; status=$$?; \
	[ "$$(cat $$out.status)" = 0 ] || status=1; rm -f $$out $$out.status; exit $$status
