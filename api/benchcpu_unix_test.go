//go:build unix

package api

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// reportCPU reports the process's CPU per operation (cpu-ns/op) from start, the
// processCPU before the loop: on a machine shared with other work, wall time per
// operation measures the neighbours as much as the code; CPU time mostly does not
// (the garbage collector's share included).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}
