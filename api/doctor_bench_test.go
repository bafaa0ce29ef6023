package api

import (
	"os"
	"reflect"
	"testing"

	"github.com/accountablework/accountable/workload"
)

// BenchmarkDoctorPath is POST /doctor/workload's own CPU in the handler, without Fiber:
// the body make bench's doctor line posts, decoded as bind decodes it (the scoped type,
// a closed body), validated, diagnosed and encoded as the bare answer is sent.
//
//	go test -run '^$' -bench DoctorPath -benchmem ./api
func BenchmarkDoctorPath(b *testing.B) {
	body, err := os.ReadFile("../workload/testdata/release-notes-agent.json")
	if err != nil {
		b.Fatal(err)
	}
	scoped := scopedBody(reflect.TypeFor[workload.WorkloadRequest]())
	s := &Server{}
	b.ReportAllocs()
	for b.Loop() {
		in := new(workload.WorkloadRequest)
		if _, err := decodeJSONBody(body, scoped, in, true); err != nil {
			b.Fatal(err)
		}
		if err := in.Validate(); err != nil {
			b.Fatal(err)
		}
		d, err := s.diagnoseWorkload(&call{}, in)
		if err != nil {
			b.Fatal(err)
		}
		d.AppendJSON(make([]byte, 0, 8<<10))
	}
}
