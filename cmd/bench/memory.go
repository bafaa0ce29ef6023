package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The memory of `accountable serve` under load: while a measured service run goes on, its
// resident set (VmRSS of /proc/<pid>/status) is read every memEvery; at the end of the
// run its high-water mark (VmHWM), which the sampler resets at the start of the run
// (writing 5 to /proc/<pid>/clear_refs, Linux 4.0 and later) so that it is the run's own
// peak, also between two samples. When the reset is refused the mark is the process's
// peak since it started, and the report says so.

const memEvery = 100 * time.Millisecond

// memSample is the memory of the service over one run.
type memSample struct {
	Samples     int
	Median      int64 // bytes: the median of the VmRSS samples
	Peak        int64 // bytes: the largest VmRSS sample
	HWM         int64 // bytes: VmHWM at the end of the run
	HWMSinceRun bool  // VmHWM was reset at the start of the run
}

// memSampler reads a process's memory until it is stopped.
type memSampler struct {
	stopc chan struct{}
	done  chan memSample
}

// sampleMemory starts reading the memory of p (nil when p is not running: stop then
// returns an empty memSample).
func (p *proc) sampleMemory() *memSampler {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	pid := p.cmd.Process.Pid
	m := &memSampler{stopc: make(chan struct{}), done: make(chan memSample, 1)}
	reset := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	status := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		var rss []int64
		read := func() (int64, int64, bool) {
			raw, err := os.ReadFile(status)
			if err != nil {
				return 0, 0, false
			}
			r, h, err := parseProcStatus(raw)
			return r, h, err == nil
		}
		tick := time.NewTicker(memEvery)
		defer tick.Stop()
		for {
			if r, _, ok := read(); ok {
				rss = append(rss, r)
			}
			select {
			case <-m.stopc:
				out := summarizeRSS(rss)
				if _, h, ok := read(); ok {
					out.HWM = h
				}
				out.HWMSinceRun = reset
				m.done <- out
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

// stop ends the sampling and returns what it saw.
func (m *memSampler) stop() memSample {
	if m == nil {
		return memSample{}
	}
	close(m.stopc)
	return <-m.done
}

// summarizeRSS is the median and the peak of VmRSS samples (bytes).
func summarizeRSS(rss []int64) memSample {
	if len(rss) == 0 {
		return memSample{}
	}
	return memSample{Samples: len(rss), Median: median(rss, itself), Peak: slices.Max(rss)}
}

// parseProcStatus reads VmRSS and VmHWM (in bytes) from the text of /proc/<pid>/status,
// whose lines read "VmRSS:\t   81234 kB".
func parseProcStatus(raw []byte) (rss, hwm int64, err error) {
	var haveRSS, haveHWM bool
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("/proc status: %s: unexpected value %q", name, value)
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("/proc status: %s: unexpected value %q", name, value)
		}
		if name == "VmRSS" {
			rss, haveRSS = n*1024, true
		} else {
			hwm, haveHWM = n*1024, true
		}
	}
	if !haveRSS || !haveHWM {
		return 0, 0, fmt.Errorf("/proc status: no VmRSS or VmHWM (a kernel thread, or not Linux?)")
	}
	return rss, hwm, nil
}

// memRow is the memory of the service over the runs of one load.
type memRow struct {
	Load string
	Runs []memSample
}

// summary is the median of the runs' medians, and the largest peak and VmHWM.
func (r memRow) summary() (med, peak, hwm int64, sinceRun bool) {
	var meds []int64
	sinceRun = len(r.Runs) > 0
	for _, s := range r.Runs {
		if s.Samples == 0 {
			continue
		}
		meds = append(meds, s.Median)
		peak, hwm = max(peak, s.Peak), max(hwm, s.HWM)
		sinceRun = sinceRun && s.HWMSinceRun
	}
	if len(meds) == 0 {
		return 0, 0, 0, false
	}
	return median(meds, itself), peak, hwm, sinceRun
}

// itself is the identity, for median over plain values.
func itself[T any](x T) T { return x }

// mib formats bytes in MiB.
func mib(b int64) string {
	if b <= 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64)
}

// memTable is the memory of the service in Markdown.
func (b *bench) memTable() string {
	var w strings.Builder
	w.WriteString("| load | runs | VmRSS median (MiB) | VmRSS peak, sampled (MiB) | VmHWM (MiB) |\n")
	w.WriteString("|---|---:|---:|---:|---:|\n")
	for _, r := range b.memory {
		med, peak, hwm, sinceRun := r.summary()
		h := mib(hwm)
		if hwm > 0 && !sinceRun {
			h += " (since start)"
		}
		fmt.Fprintf(&w, "| %s | %d | %s | %s | %s |\n", r.Load, len(r.Runs), mib(med), mib(peak), h)
	}
	return w.String()
}

// memRowFor returns the memory row of load, adding it when it is new.
func (b *bench) memRowFor(load string) *memRow {
	for i := range b.memory {
		if b.memory[i].Load == load {
			return &b.memory[i]
		}
	}
	b.memory = append(b.memory, memRow{Load: load})
	return &b.memory[len(b.memory)-1]
}
