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

vet:
	go vet ./...

fmt:
	gofmt -w .

clean-data:
	rm -rf .data
