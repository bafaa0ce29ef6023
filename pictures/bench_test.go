package pictures_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/pictures"
)

// bigMap has procs processes of five stages each, the handoffs between consecutive stages
// and from each process's last stage to the next process's first: 5 edges a process.
func bigMap(procs int) accountable.OperatingMap {
	var m accountable.OperatingMap
	for i := range procs {
		p := accountable.MapProcess{ID: fmt.Sprintf("0190a000-0000-7000-8000-%012d", i), Name: fmt.Sprintf("Process %d", i),
			LifecycleState: accountable.ProcessActive, ProvenanceMode: accountable.ProvenanceDeclared}
		for s := range 5 {
			p.Stages = append(p.Stages, accountable.CandidateStage{Key: fmt.Sprintf("p%d-s%d", i, s), Name: fmt.Sprintf("Stage %d", s)})
		}
		m.Processes = append(m.Processes, p)
		for s := range 4 {
			m.HandoffEdges = append(m.HandoffEdges, accountable.HandoffEdge{FromStageKey: fmt.Sprintf("p%d-s%d", i, s),
				ToStageKey: fmt.Sprintf("p%d-s%d", i, s+1), Handoffs: 10 + s, Open: s % 2, Breached: s % 3})
		}
		m.HandoffEdges = append(m.HandoffEdges, accountable.HandoffEdge{FromStageKey: fmt.Sprintf("p%d-s4", i),
			ToStageKey: fmt.Sprintf("p%d-s0", (i+1)%procs), Handoffs: 3})
	}
	return m
}

// go test ./pictures -run '^$' -bench OperatingMap -benchtime 1x
func BenchmarkOperatingMap(b *testing.B) {
	for _, n := range []int{10, 40, 200, 400} {
		m := bigMap(n)
		b.Run(fmt.Sprintf("processes=%d,edges=%d", n, len(m.HandoffEdges)), func(b *testing.B) {
			for b.Loop() {
				if _, err := pictures.OperatingMap(context.Background(), m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLaunchTimeline(b *testing.B) {
	l := sampleLaunch()
	for b.Loop() {
		if _, err := pictures.LaunchTimeline(l); err != nil {
			b.Fatal(err)
		}
	}
}
