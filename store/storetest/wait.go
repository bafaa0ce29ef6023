package storetest

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds, failing the test with what and within if it does not
// hold within that time. The condition is the synchronisation: the poll interval (from 1 ms,
// doubling to at most 50 ms) only bounds how late a change is noticed, so a wait costs
// little more than the thing it waits for, and within is a limit for a broken test, never
// a duration a passing test spends. cond is called at least once. WaitFor calls tb.Fatalf:
// call it from the test's goroutine.
//
// To show that something did NOT happen, wait for a later event that is ordered after it
// (a second, distinguishable trigger's effect; the component reporting that it processed the
// input) and then assert the absence; never sleep and hope.
func WaitFor(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for interval := time.Millisecond; !cond(); interval = min(2*interval, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting for %s: not within %s", what, within)
		}
		time.Sleep(interval)
	}
}
