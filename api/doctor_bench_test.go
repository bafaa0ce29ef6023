package api

import (
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"runtime"
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
	s, body := doctorServer(b)
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

// BenchmarkDoctorOverTCP is POST /doctor/workload served on a loopback socket to 8
// keep-alive clients in the same process: the network's system calls counted in, which
// the in-process benchmarks leave out (a write on a TCP socket is about a third of the
// doctor line's CPU in make bench). cpu-ns/op is the process's, client and server.
//
//	go test -run '^$' -bench DoctorOverTCP -benchmem ./api
func BenchmarkDoctorOverTCP(b *testing.B) {
	s, body := doctorServer(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.app.Listener(ln)  //nolint:errcheck // ends with the listener
	defer s.app.Shutdown() //nolint:errcheck // the benchmark is over
	client := &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 8}
	uri := "http://" + ln.Addr().String() + V1Root + "/doctor/workload"
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0))) // 8 clients, as the bench line
	b.ReportAllocs()
	cpu := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(fiber.MethodPost)
		req.SetRequestURI(uri)
		req.Header.SetContentType(fiber.MIMEApplicationJSON)
		req.SetBody(body)
		for pb.Next() {
			if err := client.Do(req, resp); err != nil || resp.StatusCode() != fiber.StatusOK {
				b.Errorf("%v %d", err, resp.StatusCode())
				return
			}
		}
	})
	reportCPU(b, cpu)
}

// doctorServer is a server with no store (the account-free operations need none), its
// request lines written into io.Discard, and the body make bench's doctor line posts.
func doctorServer(b *testing.B) (*Server, []byte) {
	b.Helper()
	body, err := os.ReadFile("../workload/testdata/release-notes-agent.json")
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(NewJSONLineHandler(io.Discard, nil))
	s, err := NewServer(Config{SiteURL: "http://api.test"}, Deps{stores: make([]any, len(storeTypes))}, log)
	if err != nil {
		b.Fatal(err)
	}
	return s, body
}
