package main

import (
	"testing"
	"time"
)

// The per-request observation of the request metrics (a counter by route, method and
// status, a histogram by route and method), as GET /work/{taskId} makes it: in the series
// the API resolved on the route's first request (api's metrics.request adds a lookup of
// it by the route's pointer).
//
//	go test -run '^$' -bench RequestMetrics -benchmem ./cmd/accountable
func BenchmarkRequestMetrics(b *testing.B) {
	m := newMetrics()
	series := m.RequestSeries("/api/v1/work/:taskId", "GET")
	b.ReportAllocs()
	for b.Loop() {
		series.Observe(200, 1500*time.Microsecond)
	}
}
