# The two commands a newcomer needs: `make run` and `make test`. Each starts (or reuses) the
# private PostgreSQL cluster and the pinned Temporal dev server through scripts/stack.sh and
# stops what it started when it ends.
SHELL := /bin/bash
BIN := .data/bin/accountable

.PHONY: run test soak build vet lint fmt bench bench-quick clean-data

build:
	@mkdir -p .data/bin
	go build -o $(BIN) ./cmd/accountable

run: build
	@scripts/stack.sh $(BIN) dev --bootstrap --witness

test:
	@scripts/stack.sh bash -c 'set -e; test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }; go vet ./...; scripts/lint.sh; export CHROMIUM_PATH=$$(scripts/chromium.sh); \
		export ACCOUNTABLE_TEST_LOGS=$$PWD/.data/test-logs; rm -rf "$$ACCOUNTABLE_TEST_LOGS"; \
		go test -race -count=1 -timeout 30m ./...; scripts/logsecrets.sh "$$ACCOUNTABLE_TEST_LOGS"'

# make bench: the service beside the machine's own limits (pgbench, a bare Fiber + pgx server),
# measured in one run; writes docs/benchmarks.md. See docs/development.md.
bench: build
	@go build -o .data/bin/bench ./cmd/bench
	@scripts/stack.sh .data/bin/bench run

# make bench-quick: a few minutes' check of a change to the request path (the create,
# complete at 8 clients, read, doctor and validate lines, 3 runs of 5 s), printing the same
# table; it writes .data/bench-quick.md, never docs/benchmarks.md (the record is the full
# make bench). BENCH_* settings given on the command line win.
bench-quick: build
	@go build -o .data/bin/bench ./cmd/bench
	@BENCH_LINES=$${BENCH_LINES:-create,complete,read,doctor,validate} BENCH_COMPLETE_CLIENTS=$${BENCH_COMPLETE_CLIENTS:-8} \
		BENCH_RUNS=$${BENCH_RUNS:-3} BENCH_DURATION=$${BENCH_DURATION:-5s} BENCH_WARMUP=$${BENCH_WARMUP:-1s} \
		BENCH_OUT=$${BENCH_OUT:-.data/bench-quick.md} scripts/stack.sh .data/bin/bench run

# The long forms of what make test runs briefly: the request fuzz run against the live API
# (SOAK_DURATION, default 10m), the exactly-once bursts (SOAK_EXACTLY_ONCE_REQUESTS, default
# 1000 identical requests an operation, three times), the partitioned ledger grown to
# SOAK_PARTITION_EVENTS (default 10,000,000) events, the OAuth/MCP fuzz run
# (SOAK_OAUTH_REQUESTS), the receipt schema's quick pass against the library on every single
# change of the valid fixtures (make test: a quarter) and every go test -fuzz target
# (SOAK_FUZZTIME each, default 1m).
soak:
	@scripts/stack.sh bash -c 'set -e; \
		REQUEST_FUZZ_DURATION=$${SOAK_DURATION:-10m} go test -count=1 -timeout 2h -run "^TestRequestFuzz" ./api; \
		EXACTLY_ONCE_REQUESTS=$${SOAK_EXACTLY_ONCE_REQUESTS:-1000} go test -count=3 -timeout 1h -run "^TestExactlyOnceUnderConcurrency$$|^TestControllerFirstRunsRace$$" ./api; \
		PARTITION_SOAK_EVENTS=$${SOAK_PARTITION_EVENTS:-10000000} go test -count=1 -timeout 1h -run "^TestPartitionedLedgerDoesNotSlowWithSize$$" -v ./store; \
		OAUTH_FUZZ_REQUESTS=$${SOAK_OAUTH_REQUESTS:-100000} go test -count=1 -timeout 1h -run "^TestOAuthAndMCPRefuseHostileInput$$" ./api; \
		QUICK_PASS_ALL=1 go test -count=1 -timeout 1h -run "^TestQuickPassAgreesWithTheLibrary$$" ./receipt/schema; \
		for pkg in . ./api ./receipt ./receipt/schema ./workload; do \
			for f in $$(go test -list "^Fuzz" $$pkg | grep "^Fuzz"); do \
				echo "fuzzing $$f in $$pkg"; go test -run "^$$" -fuzz "^$$f$$" -fuzztime $${SOAK_FUZZTIME:-1m} $$pkg; \
			done; \
		done'

vet:
	go vet ./...

# golangci-lint, pinned in scripts/lint.sh and configured by .golangci.yml (make test runs it too).
lint:
	@scripts/lint.sh

fmt:
	gofmt -w .

clean-data:
	rm -rf .data
