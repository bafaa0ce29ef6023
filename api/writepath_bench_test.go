package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
)

// The service's own CPU on make bench's two write lines, POST /work and
// POST /work/{taskId}/complete, measured in process as BenchmarkCommonPath measures the
// read: the whole request through the Fiber app (every middleware, binding, the
// Idempotency-Key's fingerprint, the handler, the envelope, the log line into io.Discard)
// with the bodies and headers make bench sends, the database left out (the work store
// answers results made once, their JSON kept as the store keeps it).
//
//	go test -run '^$' -bench WritePath -benchmem ./api
func BenchmarkWritePath(b *testing.B) {
	task := benchTask()
	key, keys := heldKey(task.WorkspaceID)
	store := benchWorkStore{task: task}
	store.created = accountable.WorkCreated{TaskID: task.ID, EventRef: accountable.EventRef{EventID: "0190c7a2-1b2c-7d3e-8f40-123456789abd",
		AggregateVersion: 1, EventHash: "sha256:" + hex64}, Task: task}
	store.created.RememberJSON(mustJSON(b, store.created))
	done := task
	done.Status = accountable.TaskCompleted
	store.completion = accountable.WorkCompletion{TaskID: task.ID, ReceiptID: "0190c7a2-1b2c-7d3e-8f40-123456789abf",
		EventRef: accountable.EventRef{EventID: "0190c7a2-1b2c-7d3e-8f40-123456789ac0", AggregateVersion: 2, EventHash: "sha256:" + hex64},
		Task:     done, Receipt: accountable.Receipt{ID: "0190c7a2-1b2c-7d3e-8f40-123456789abf", TaskID: task.ID, Status: "completed",
			Summary: "Shipped the quarterly report; the figures were checked against the ledger.", Evidence: accountable.Object(`{"notes":"Reviewed by finance."}`),
			CreatedAt: task.UpdatedAt}}
	store.completion.RememberJSON(mustJSON(b, store.completion))
	stores := make([]any, len(storeTypes))
	stores[workStore.index] = store
	log := slog.New(NewJSONLineHandler(io.Discard, nil)) // the request line written directly
	s, err := NewServer(Config{SiteURL: "http://api.test"}, Deps{Keys: keys, stores: stores}, log)
	if err != nil {
		b.Fatal(err)
	}
	handler := s.app.Handler()
	remote := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 40000}
	// run sends the request prepare fills, a fresh Idempotency-Key each time, as make bench
	// does, and expects status.
	run := func(b *testing.B, status int, prepare func(req *fasthttp.Request)) {
		var req fasthttp.Request
		prepare(&req)
		req.Header.Set(fiber.HeaderAuthorization, "Bearer "+key)
		req.Header.SetContentType(fiber.MIMEApplicationJSON)
		rc := &fasthttp.RequestCtx{}
		rc.Init(&req, remote, nil)
		var idem []byte
		send := func(i int) {
			idem = strconv.AppendInt(append(idem[:0], "bench-"...), int64(i), 10)
			rc.Request.Header.SetBytesV("Idempotency-Key", idem)
			rc.Response.Reset()
			handler(rc)
		}
		send(0)
		if rc.Response.StatusCode() != status {
			b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
		}
		b.ReportAllocs()
		i := 0
		cpu := processCPU()
		for b.Loop() {
			i++
			send(i)
		}
		reportCPU(b, cpu)
		if rc.Response.StatusCode() != status {
			b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
		}
	}

	b.Run("createWork", func(b *testing.B) {
		run(b, fiber.StatusCreated, func(req *fasthttp.Request) {
			req.Header.SetMethod(fiber.MethodPost)
			req.SetRequestURI(V1Root + "/work")
			req.SetBodyRaw([]byte(`{"title":"Prepare the quarterly report bench-1","description":"Collect the figures, check them against the ledger and write the summary for the board.","priority":"high","metadata":{"source":"bench","batch":"bench"}}`))
		})
	})
	b.Run("completeWork", func(b *testing.B) {
		run(b, fiber.StatusOK, func(req *fasthttp.Request) {
			req.Header.SetMethod(fiber.MethodPost)
			req.SetRequestURI(V1Root + "/work/" + task.ID + "/complete")
			req.SetBodyRaw([]byte(`{"version_token":"` + task.Concurrency.VersionToken + `","summary":"Shipped the quarterly report; the figures were checked against the ledger.","measured_duration_hours":1.5,"cost_cents":1200,"evidence":{"links":["https://example.com/pr/1234","https://example.com/reports/q3.pdf"],"notes":"Reviewed by finance."}}`))
		})
	})
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func mustJSON(b *testing.B, v any) []byte {
	text, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return text
}
