# The two commands a newcomer needs: `make run` and `make test`. Each starts (or reuses) the
# private PostgreSQL cluster and the pinned Temporal dev server through scripts/stack.sh and
# stops what it started when it ends.
SHELL := /bin/bash
BIN := .data/bin/accountable

.PHONY: run test build vet fmt bench clean-data

build:
	@mkdir -p .data/bin
	go build -o $(BIN) ./cmd/accountable

run: build
	@scripts/stack.sh $(BIN) dev --bootstrap

test:
	@scripts/stack.sh bash -c 'set -e; test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }; go vet ./...; go test -race -count=1 -timeout 30m ./...'

# make bench: the service beside the machine's own limits (pgbench, a bare Fiber + pgx server),
# measured in one run; writes docs/benchmarks.md. See README.md.
bench: build
	@go build -o .data/bin/bench ./cmd/bench
	@scripts/stack.sh .data/bin/bench run

vet:
	go vet ./...

fmt:
	gofmt -w .

clean-data:
	rm -rf .data
