# The two commands of README.md: `go run ./cmd/funnel serve` and `make test`.
GO ?= go

.PHONY: test bench build vet load

# Every test, on SQLite and on PostgreSQL (FUNNEL_TEST_DATABASE_URL, default
# postgres://postgres@127.0.0.1:5432/test). With CI=true a missing PostgreSQL fails the run.
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

build:
	$(GO) build -o funnel ./cmd/funnel

vet:
	$(GO) vet ./...

# Benchmarks (Go benchmarks, then the HTTP load script). Not part of `make test`.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3s -timeout 30m ./...
	$(GO) run ./cmd/loadtest
