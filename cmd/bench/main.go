// Command bench is the benchmark harness behind `make bench`: it measures the service and
// the machine's own limit for the same work in one run, and writes docs/benchmarks.md.
//
//	bench run        the whole benchmark (make bench runs it through scripts/stack.sh, which
//	                 provides DATABASE_URL and TEMPORAL_ADDRESS)
//	bench baseline   the bare Fiber + pgx server the reads are compared with (run starts it)
//
// Settings come from BENCH_* environment variables (see settings.go and docs/development.md).
package main

import (
	"fmt"
	"os"
)

const usage = `bench: the benchmark harness of the Accountable Work Service

Usage:
  bench run        build nothing, start the service and the baselines, measure, write docs/benchmarks.md
  bench baseline   serve the bare Fiber + pgx handlers (BENCH_BASELINE_ADDR, DATABASE_URL)

Run it through make bench (scripts/stack.sh provides PostgreSQL and Temporal).
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run()
	case "baseline":
		err = serveBaseline()
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
