//go:build race

package canonical_test

// raceEnabled says the tests run under the race detector, which changes allocation counts.
const raceEnabled = true
