package workload

import "testing"

// TestWorkloadActionIndex: the action set's indexes are the enumeration's, and it holds
// every action (workloadActionPoints has a row for each).
func TestWorkloadActionIndex(t *testing.T) {
	if len(workloadActions) != workloadActionCount || len(workloadActionPoints) != workloadActionCount {
		t.Fatalf("%d actions, %d rows, a set of %d", len(workloadActions), len(workloadActionPoints), workloadActionCount)
	}
	for i, a := range workloadActions {
		if workloadActionIndex(a) != i {
			t.Fatalf("%s: index %d, want %d", a, workloadActionIndex(a), i)
		}
	}
	for _, a := range []WorkloadAction{"", "teleport", "Research", "research "} {
		if workloadActionIndex(a) != -1 {
			t.Fatalf("%q has an index", a)
		}
	}
}
