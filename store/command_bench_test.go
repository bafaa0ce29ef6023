package store_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The command path's CPU: a creation (one round trip, runBlind) and its completion (one
// round trip, runSingle: the gate and CompleteWorkSQL), each
// with an idempotency key as the API sends them. ns/op is mostly waiting for PostgreSQL;
// cpu-ns/op is what this process spent (user and system time), the figure the bench
// lines' ratios depend on:
//
//	scripts/stack.sh go test -run '^$' -bench CreateCompleteWork -benchmem ./store
func BenchmarkCreateCompleteWork(b *testing.B) {
	db := storetest.Open(b)
	p := storetest.NewTenant(b, db).Principal
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		for b.Loop() {
			if err := createComplete(db, p); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	})
	// 8 clients at once (the bench lines run 8 to 32 clients).
	b.Run("clients=8", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8 / runtime.GOMAXPROCS(0))
		start := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := createComplete(db, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	})
}

// benchKeys makes the benchmark's idempotency keys new in every run (a replay would cost
// less than the command).
var (
	benchRun  = strconv.FormatInt(time.Now().UnixNano(), 36)
	benchKeys atomic.Int64
)

// createComplete creates a task and completes it, each with a new idempotency key.
func createComplete(db *store.DB, p accountable.Principal) error {
	ctx := context.Background()
	desc := "Collect the figures, check them against the ledger and write the summary for the board."
	prio := accountable.PriorityHigh
	hours := 1.5
	key := benchRun + "-" + strconv.FormatInt(benchKeys.Add(1), 10)
	created, _, err := db.CreateWork(ctx, p, &accountable.Idempotency{Key: "c-" + key, Operation: "work.create", RequestDigest: "sha256:c" + key},
		accountable.CreateWork{Title: "Prepare the quarterly report", Description: &desc, Priority: &prio,
			Metadata: accountable.Object(`{"source":"bench","batch":"store"}`)})
	if err != nil {
		return err
	}
	token := created.Task.Version().Token()
	_, _, err = db.CompleteWork(ctx, p, &accountable.Idempotency{Key: "d-" + key, Operation: "work.complete", RequestDigest: "sha256:d" + key},
		accountable.CompleteWork{TaskID: created.TaskID, VersionToken: &token, MeasuredDurationHours: &hours,
			Evidence: accountable.Object(`{"links":["https://example.test/pr/1"]}`)})
	return err
}

// cpuTime is the user and system CPU this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
