package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// settings of one benchmark run, from BENCH_* environment variables.
type settings struct {
	Duration time.Duration // measured part of every run
	Warmup   time.Duration // unmeasured lead-in of every run
	Runs     int           // runs of each side of each line; the report gives their medians

	CompleteClients []int
	CreateClients   []int
	ReadClients     []int
	Lines           map[string]bool // which lines to measure (all by default)

	PagingEvents int // events the paging line reads per pass
	// DiscoveryEvents is the size of the ledger the discovery line mines.
	DiscoveryEvents int
	// ProjectionEvents is the size of the ledger the projection line folds.
	ProjectionEvents int
	PageLimit        int
	// ContextEvents is the size of the ledger of the context line's workspace;
	// ContextClients the client counts of its full capsules.
	ContextEvents  int
	ContextClients []int
	// ConsoleProcesses is the console line's processes (and handoffs) in its workspace.
	ConsoleProcesses int
	// GrowthEvents are the sizes of the growth line's ledger, smallest first;
	// GrowthClients its completions' client count.
	GrowthEvents  []int
	GrowthClients int
	// The fairness line: FairWorkspaces workspaces, each with its own key (the first the
	// noisy one, FairNoisyClients closed-loop writers), the others sharing FairQuietRPS
	// requests a second, open loop; its third phase on a second `accountable serve` on
	// FairPort with WORKSPACE_RATE_LIMIT_RPS=FairWorkspaceRPS and _BURST=FairWorkspaceBurst.
	FairWorkspaces     int
	FairQuietRPS       float64
	FairNoisyClients   int
	FairWorkspaceRPS   float64
	FairWorkspaceBurst int
	// FairInFlight is the second serve's WORKSPACE_MAX_IN_FLIGHT, FairHold its
	// RATE_LIMIT_HOLD.
	FairInFlight int
	FairHold     time.Duration
	FairPort     int
	// The ledgerlog line (issue 27's targets): the sizes of its synthetic logs, smallest
	// first, the client counts of its proof reads, and the port of its witness.
	LogSizes       []int
	LogClients     []int
	LogWitnessPort int

	ServicePort int
	// DefaultsPort is where the defaults line's server listens; DefaultsEnv adds settings to
	// it; DefaultsCompleteClients and DefaultsReadClients are its lines' clients.
	DefaultsPort                                 int
	DefaultsEnv                                  string
	DefaultsCompleteClients, DefaultsReadClients int
	BaselinePort                                 int
	PprofPort                                    int
	// ServiceConns is the service's DATABASE_MAX_CONNS (and the baseline's pool size):
	// enough for the highest client count, as pgbench has one connection per client.
	ServiceConns int

	Database string // the benchmark's own database on the same server, dropped and recreated
	KeepDB   bool   // keep it after the run (it is dropped at the end otherwise)
	Profile  bool   // capture a CPU profile of complete-work at ProfileClients clients
	// ProfileClients is the client count of the profiled run, ProfileLine its operation
	// (complete, create or read).
	ProfileClients int
	ProfileLine    string
	Out            string // the report
	Bin            string // the accountable binary
}

// defaultLogSizes are the ledgerlog line's synthetic logs by default.
var defaultLogSizes = []int{1000000, 10000000}

var allLines = []string{"create", "floor", "complete", "read", "defaults", "mcp", "paging", "doctor", "validate", "projection", "stream", "proposal", "launch", "discovery", "context", "console", "ledgerlog", "growth", "fairness"}

func loadSettings() (settings, error) {
	var errs []string
	s := settings{
		Duration:                envDuration("BENCH_DURATION", 10*time.Second, &errs),
		Warmup:                  envDuration("BENCH_WARMUP", 2*time.Second, &errs),
		Runs:                    envInt("BENCH_RUNS", 5, &errs),
		CompleteClients:         envInts("BENCH_COMPLETE_CLIENTS", []int{1, 8, 32}, &errs),
		CreateClients:           envInts("BENCH_CREATE_CLIENTS", []int{8}, &errs),
		ReadClients:             envInts("BENCH_READ_CLIENTS", []int{8}, &errs),
		PagingEvents:            envInt("BENCH_PAGING_EVENTS", 10000, &errs),
		DiscoveryEvents:         envInt("BENCH_DISCOVERY_EVENTS", 100000, &errs),
		ProjectionEvents:        envInt("BENCH_PROJECTION_EVENTS", 100000, &errs),
		ContextEvents:           envInt("BENCH_CONTEXT_EVENTS", 100000, &errs),
		ContextClients:          envInts("BENCH_CONTEXT_CLIENTS", []int{1, 8}, &errs),
		ConsoleProcesses:        envInt("BENCH_CONSOLE_PROCESSES", 1000, &errs),
		PageLimit:               envInt("BENCH_PAGE_LIMIT", 500, &errs),
		GrowthEvents:            envInts("BENCH_GROWTH_EVENTS", []int{10000, 100000, 1000000}, &errs),
		GrowthClients:           envInt("BENCH_GROWTH_CLIENTS", 8, &errs),
		FairWorkspaces:          envInt("BENCH_FAIRNESS_WORKSPACES", 1000, &errs),
		FairQuietRPS:            envFloat("BENCH_FAIRNESS_QUIET_RPS", 200, &errs),
		FairNoisyClients:        envInt("BENCH_FAIRNESS_NOISY_CLIENTS", 32, &errs),
		FairWorkspaceRPS:        envFloat("BENCH_FAIRNESS_WORKSPACE_RPS", 50, &errs),
		FairWorkspaceBurst:      envInt("BENCH_FAIRNESS_WORKSPACE_BURST", 100, &errs),
		FairInFlight:            envInt("BENCH_FAIRNESS_WORKSPACE_IN_FLIGHT", 2, &errs),
		FairHold:                envDuration("BENCH_FAIRNESS_HOLD", time.Second, &errs),
		FairPort:                envInt("BENCH_FAIRNESS_PORT", 18083, &errs),
		DefaultsPort:            envInt("BENCH_DEFAULTS_PORT", 18085, &errs),
		DefaultsEnv:             env("BENCH_DEFAULTS_ENV", ""),
		DefaultsCompleteClients: envInt("BENCH_DEFAULTS_COMPLETE_CLIENTS", 32, &errs),
		DefaultsReadClients:     envInt("BENCH_DEFAULTS_READ_CLIENTS", 8, &errs),
		LogSizes:                envInts("BENCH_LOG_SIZES", defaultLogSizes, &errs),
		LogClients:              envInts("BENCH_LOG_CLIENTS", []int{1, 8}, &errs),
		LogWitnessPort:          envInt("BENCH_LOG_WITNESS_PORT", 18084, &errs),
		ServicePort:             envInt("BENCH_HTTP_PORT", 18080, &errs),
		BaselinePort:            envInt("BENCH_BASELINE_PORT", 18081, &errs),
		PprofPort:               envInt("BENCH_PPROF_PORT", 18082, &errs),
		Database:                env("BENCH_DB", "accountable_bench"),
		KeepDB:                  env("BENCH_KEEP_DB", "") == "1",
		Profile:                 env("BENCH_PROFILE", "") == "1",
		ProfileClients:          envInt("BENCH_PROFILE_CLIENTS", 8, &errs),
		ProfileLine:             env("BENCH_PROFILE_LINE", "complete"),
		Out:                     env("BENCH_OUT", "docs/benchmarks.md"),
		Bin:                     env("BENCH_ACCOUNTABLE_BIN", ".data/bin/accountable"),
		Lines:                   map[string]bool{},
	}
	for _, l := range strings.Split(env("BENCH_LINES", strings.Join(allLines, ",")), ",") {
		l = strings.TrimSpace(l)
		if !slices.Contains(allLines, l) {
			errs = append(errs, fmt.Sprintf("BENCH_LINES: unknown line %q (have %s)", l, strings.Join(allLines, ", ")))
		}
		s.Lines[l] = true
	}
	if s.Runs < 1 {
		errs = append(errs, "BENCH_RUNS: at least 1")
	}
	if s.Duration <= 0 {
		errs = append(errs, "BENCH_DURATION: positive")
	}
	if s.PageLimit < 1 || s.PageLimit > 1000 {
		errs = append(errs, "BENCH_PAGE_LIMIT: 1 to 1000 (the API's bound)")
	}
	if len(s.GrowthEvents) == 0 || !slices.IsSorted(s.GrowthEvents) || s.GrowthEvents[0] < 2*s.PageLimit {
		errs = append(errs, fmt.Sprintf("BENCH_GROWTH_EVENTS: sizes from smallest to largest, the smallest at least %d (two pages)", 2*s.PageLimit))
	}
	if s.ContextEvents < 0 {
		errs = append(errs, "BENCH_CONTEXT_EVENTS: 0 or more")
	}
	if s.ConsoleProcesses < 1 {
		errs = append(errs, "BENCH_CONSOLE_PROCESSES: at least 1")
	}
	if s.FairWorkspaces < 2 {
		errs = append(errs, "BENCH_FAIRNESS_WORKSPACES: at least 2 (one noisy, the others quiet)")
	}
	if s.FairQuietRPS <= 0 || s.FairWorkspaceRPS <= 0 || s.FairWorkspaceBurst < 0 {
		errs = append(errs, "BENCH_FAIRNESS_QUIET_RPS and BENCH_FAIRNESS_WORKSPACE_RPS: positive; BENCH_FAIRNESS_WORKSPACE_BURST: 0 or more")
	}
	if s.FairNoisyClients < 1 || s.FairNoisyClients > 256 {
		errs = append(errs, fmt.Sprintf("BENCH_FAIRNESS_NOISY_CLIENTS: 1 to 256, not %d", s.FairNoisyClients))
	}
	if len(s.LogSizes) == 0 || !slices.IsSorted(s.LogSizes) || s.LogSizes[0] < 2*logRealEvents {
		errs = append(errs, fmt.Sprintf("BENCH_LOG_SIZES: sizes from smallest to largest, the smallest at least %d (twice the real events at the log's start)", 2*logRealEvents))
	}
	if !slices.Contains([]string{"complete", "create", "read", "mcp", "doctor", "validate", "context"}, s.ProfileLine) {
		errs = append(errs, "BENCH_PROFILE_LINE: complete, create, read, mcp, doctor, validate or context")
	}
	maxClients := 1
	for _, c := range slices.Concat(s.CompleteClients, s.CreateClients, s.ReadClients, s.LogClients, s.ContextClients, []int{s.ProfileClients, s.GrowthClients}) {
		if c < 1 || c > 256 {
			errs = append(errs, fmt.Sprintf("client counts are 1 to 256, not %d", c))
		}
		maxClients = max(maxClients, c)
	}
	s.ServiceConns = envInt("BENCH_SERVICE_CONNS", maxClients, &errs)
	if len(errs) > 0 {
		return s, fmt.Errorf("settings: %s", strings.Join(errs, "; "))
	}
	return s, nil
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int, errs *[]string) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		*errs = append(*errs, name+": want an integer")
		return def
	}
	return n
}

func envFloat(name string, def float64, errs *[]string) float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		*errs = append(*errs, name+": want a number")
		return def
	}
	return f
}

func envInts(name string, def []int, errs *[]string) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			*errs = append(*errs, name+": want integers separated by commas")
			return def
		}
		out = append(out, n)
	}
	return out
}

func envDuration(name string, def time.Duration, errs *[]string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		*errs = append(*errs, name+": want a duration such as 10s")
		return def
	}
	return d
}
