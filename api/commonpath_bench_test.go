package api

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/tokens"
)

// The service's own CPU on the path every authenticated request takes, and on
// GET /work/{taskId} (issue 30: make bench's read line), measured in process with the
// database and the network left out: the key is held in memory as the key cache holds it,
// and the work store answers a task it has at hand.
//
//	go test -run '^$' -bench CommonPath -benchmem ./api
//
// getWork is the whole request through the Fiber app (every middleware, the handler, the
// envelope, the log line written directly into io.Discard by a JSONLineHandler); the
// others are its stages alone: auth the bearer key's verification (a key held in memory),
// log the request's line, bind the binding of its path parameter, encodeTask the answer's
// envelope.
func BenchmarkCommonPath(b *testing.B) {
	task := benchTask()
	key, keys := heldKey(task.WorkspaceID)
	stores := make([]any, len(storeTypes))
	stores[workStore.index] = benchWorkStore{task: task}
	log := slog.New(NewJSONLineHandler(io.Discard, nil)) // the request line written directly
	s, err := NewServer(Config{SiteURL: "http://api.test"}, Deps{Keys: keys, stores: stores}, log)
	if err != nil {
		b.Fatal(err)
	}
	handler := s.app.Handler()
	remote := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 40000}
	newRequest := func() *fasthttp.RequestCtx {
		var req fasthttp.Request
		req.Header.SetMethod(fiber.MethodGet)
		req.SetRequestURI(V1Root + "/work/" + task.ID)
		req.Header.Set(fiber.HeaderAuthorization, "Bearer "+key)
		rc := &fasthttp.RequestCtx{}
		rc.Init(&req, remote, nil)
		return rc
	}

	b.Run("getWork", func(b *testing.B) {
		rc := newRequest()
		benchAnswers(b, handler, rc)
	})

	b.Run("auth", func(b *testing.B) {
		rc := newRequest()
		fc := s.app.AcquireCtx(rc)
		defer s.app.ReleaseCtx(fc)
		if _, err := s.verifyBearer(fc); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.verifyBearer(fc); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("log", func(b *testing.B) {
		rc := newRequest()
		fc := s.app.AcquireCtx(rc)
		defer s.app.ReleaseCtx(fc)
		p, err := s.verifyBearer(fc)
		if err != nil {
			b.Fatal(err)
		}
		fc.Locals(localPrincipal, p)
		fc.Status(fiber.StatusOK)
		start := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			s.logRequest(fc, "0190c7a2-1b2c-7d3e-8f40-123456789abf", fiber.StatusOK, start)
		}
	})

	b.Run("bind", func(b *testing.B) {
		var d *operation
		for i := range s.ops {
			if s.ops[i].ID == "getWork" {
				d = &s.ops[i]
			}
		}
		// The parameters are the route's: bind runs in a handler of the operation's path.
		app := fiber.New(fiber.Config{Immutable: true})
		app.Get(d.route(), func(fc *fiber.Ctx) error {
			c := &call{fiber: fc}
			b.ReportAllocs()
			for b.Loop() {
				var in workRef
				if err := s.bind(c, d, &in); err != nil {
					return err
				}
			}
			return nil
		})
		rc := newRequest()
		rc.Request.SetRequestURI("/work/" + task.ID)
		app.Handler()(rc)
		if rc.Response.StatusCode() != fiber.StatusOK {
			b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
		}
	})

	b.Run("encodeTask", func(b *testing.B) {
		rc := &fasthttp.RequestCtx{}
		m := meta{APIVersion: accountable.APIVersion, WorkspaceID: task.WorkspaceID}
		b.ReportAllocs()
		for b.Loop() {
			fc := s.app.AcquireCtx(rc)
			if err := respond(fc, fiber.StatusOK, task, m); err != nil {
				b.Fatal(err)
			}
			s.app.ReleaseCtx(fc)
			rc.Response.Reset()
		}
	})
}

// benchTask is a task as make bench's read line reads it: created by POST /work with a
// title, a description and metadata.
func benchTask() accountable.Task {
	desc := "Collect the figures from the ledger & check them <before> the review."
	cost := int64(125000)
	now := accountable.TimeOf(time.Date(2026, 11, 27, 10, 55, 54, 123456000, time.UTC))
	return accountable.Task{ID: "0190c7a2-1b2c-7d3e-8f40-123456789abc", WorkspaceID: "0190c7a2-1b2c-7d3e-8f40-123456789abe",
		Title: "Prepare the quarterly report", Description: &desc, Status: accountable.TaskTodo,
		Priority: accountable.PriorityMedium, Metadata: accountable.Object(`{"source":"bench","tags":["q3","finance"]}`),
		EstimatedCostCents: &cost, CreatedAt: now, UpdatedAt: now, AggregateVersion: 1}.WithConcurrency()
}

// benchWorkStore answers GetWork with its task, and CreateWork and CompleteWork with
// results made once, their JSON kept as the store keeps it (accountable.Encoded).
type benchWorkStore struct {
	task       accountable.Task
	created    accountable.WorkCreated
	completion accountable.WorkCompletion
}

func (w benchWorkStore) GetWork(context.Context, string, string) (accountable.Task, error) {
	return w.task, nil
}

func (w benchWorkStore) CreateWork(context.Context, accountable.Principal, *accountable.Idempotency, accountable.CreateWork) (accountable.WorkCreated, bool, error) {
	return w.created, false, nil
}

func (benchWorkStore) ListWork(context.Context, string, accountable.WorkFilter) ([]accountable.Task, *accountable.WorkCursor, error) {
	panic("not in the bench")
}

func (w benchWorkStore) CompleteWork(context.Context, accountable.Principal, *accountable.Idempotency, accountable.CompleteWork) (accountable.WorkCompletion, bool, error) {
	return w.completion, false, nil
}

func (benchWorkStore) WorkReceipt(context.Context, string, string) (accountable.WorkReceipt, error) {
	panic("not in the bench")
}

// heldKey makes a key of someone@example.com's, a member of workspaceID only, held in
// memory by the heldKeyStore returned with it.
func heldKey(workspaceID string) (string, *heldKeyStore) {
	key, prefix := tokens.NewAPIKey()
	return key, &heldKeyStore{key: accountable.APIKey{ID: "0190c7a2-1b2c-7d3e-8f40-000000000001", Prefix: prefix,
		UserID: "0190c7a2-1b2c-7d3e-8f40-000000000002", UserEmail: "someone@example.com", WorkspaceID: workspaceID,
		MemberOf: []string{workspaceID}}, hash: tokens.HashAPIKey(key)}
}

// heldKeyStore holds one key in memory, as the key cache holds a key it found.
type heldKeyStore struct {
	KeyStore // nothing else is called
	key      accountable.APIKey
	hash     []byte
}

func (k *heldKeyStore) KeyByPrefix(_ context.Context, prefix string) (accountable.APIKey, []byte, error) {
	if prefix != k.key.Prefix {
		return accountable.APIKey{}, nil, accountable.NotFound("API key")
	}
	return k.key, k.hash, nil
}

func (k *heldKeyStore) KnownKeyHash(prefix string) ([]byte, bool) {
	return k.hash, prefix == k.key.Prefix
}

func (k *heldKeyStore) KnownPrefix(prefix string) bool   { return prefix == k.key.Prefix }
func (k *heldKeyStore) UnknownPrefix(prefix string) bool { return false }

func (k *heldKeyStore) HeldKey(prefix string) (accountable.APIKey, []byte, bool) {
	return k.key, k.hash, prefix == k.key.Prefix
}

// benchAnswers sends rc's request through handler over and over and reports the process's
// CPU per request (reportCPU); the first and the last answers must be 200.
func benchAnswers(b *testing.B, handler fasthttp.RequestHandler, rc *fasthttp.RequestCtx) {
	b.Helper()
	handler(rc)
	if rc.Response.StatusCode() != fiber.StatusOK {
		b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
	}
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		rc.Response.Reset()
		handler(rc)
	}
	reportCPU(b, cpu)
	if rc.Response.StatusCode() != fiber.StatusOK {
		b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
	}
}
