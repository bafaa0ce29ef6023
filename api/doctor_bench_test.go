package api

import (
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

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

// BenchmarkDoctorRequest is POST /doctor/workload through the Fiber app, as make bench's
// doctor line sends it (no account-free rate limit: PUBLIC_RATE_LIMIT_RPS=0): every
// middleware, bind, the diagnosis, the bare answer and the log line, written directly
// into io.Discard; the network left out.
//
//	go test -run '^$' -bench DoctorRequest -benchmem ./api
func BenchmarkDoctorRequest(b *testing.B) {
	body, err := os.ReadFile("../workload/testdata/release-notes-agent.json")
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(NewJSONLineHandler(io.Discard, nil))
	s, err := NewServer(Config{SiteURL: "http://api.test"}, Deps{stores: make([]any, len(storeTypes))}, log)
	if err != nil {
		b.Fatal(err)
	}
	handler := s.app.Handler()
	var req fasthttp.Request
	req.Header.SetMethod(fiber.MethodPost)
	req.SetRequestURI(V1Root + "/doctor/workload")
	req.Header.SetContentType(fiber.MIMEApplicationJSON)
	req.SetBody(body)
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 40000}, nil)
	benchAnswers(b, handler, rc)
}
