package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/contextpack"
	"github.com/accountablework/accountable/tokens"
)

// BenchmarkContextPackPath is POST /context-pack (delivery_mode full) as make bench's
// context line sends it, the service's own CPU in process: the whole request through the
// Fiber app (auth of a key held in memory, the body's binding, the handler, the answer's
// envelope, the log line), with the store faked at the handler's interface
// (ContextStore) answering the line's sources as the database read them. What the bare
// server of the line does too (the read) is left out: the rest is the capsule's cost.
//
//	go test -run '^$' -bench ContextPackPath -benchmem ./api
//
// path is the whole request; build and encode its two biggest stages alone (the capsule,
// and its answer's JSON with the text escaped).
func BenchmarkContextPackPath(b *testing.B) {
	src := benchContextSources()
	key, prefix := tokens.NewAPIKey()
	keys := &heldKeyStore{key: accountable.APIKey{ID: "0190c7a2-1b2c-7d3e-8f40-000000000001", Prefix: prefix,
		UserID: "0190c7a2-1b2c-7d3e-8f40-000000000002", UserEmail: "someone@example.com", WorkspaceID: src.WorkspaceID,
		MemberOf: []string{src.WorkspaceID}}, hash: tokens.HashAPIKey(key)}
	stores := make([]any, len(storeTypes))
	stores[contextStore.index] = heldContextStore{src: src}
	log := slog.New(NewJSONLineHandler(io.Discard, nil))
	s, err := NewServer(Config{SiteURL: "http://api.test"}, Deps{Keys: keys, stores: stores}, log)
	if err != nil {
		b.Fatal(err)
	}
	handler := s.app.Handler()
	remote := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 40000}
	body := fmt.Appendf(nil, `{"workspace_id":%q,"task_id":%q,"delivery_mode":"full","max_payload_tokens":%d,"reader_tokenizer":%q}`,
		src.WorkspaceID, src.Scope.Task.Ref.ID, accountable.DefaultContextPayloadTokens, accountable.TokenizerO200k)
	var req fasthttp.Request
	req.Header.SetMethod(fiber.MethodPost)
	req.SetRequestURI(V1Root + "/context-pack")
	req.Header.Set(fiber.HeaderAuthorization, "Bearer "+key)
	req.Header.SetContentType(fiber.MIMEApplicationJSON)
	req.SetBody(body)

	b.Run("path", func(b *testing.B) {
		rc := &fasthttp.RequestCtx{}
		rc.Init(&req, remote, nil)
		handler(rc)
		if rc.Response.StatusCode() != fiber.StatusOK {
			b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
		}
		b.ReportMetric(float64(len(rc.Response.Body())), "answer-bytes")
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
	})

	tk, err := contextpack.Tokenizer(accountable.TokenizerO200k)
	if err != nil {
		b.Fatal(err)
	}
	o := contextpack.Options{Tokens: tk, Budget: accountable.DefaultContextPayloadTokens, Mode: accountable.ContextDeliveryFull}
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := contextpack.Build(src, o); err != nil {
				b.Fatal(err)
			}
		}
	})
	p, err := contextpack.Build(src, o)
	if err != nil {
		b.Fatal(err)
	}
	out := accountable.ContextPreparation{ContextCapsule: &p.Capsule, ContextDelivery: p.Delivery,
		ContextTransfer: &accountable.ContextTransfer{SchemaVersion: accountable.ContextTransferSchema,
			Mode: string(accountable.ContextDeliveryFull), Version: p.Version, Serialized: &p.Text}}
	b.Run("encode", func(b *testing.B) {
		rc := &fasthttp.RequestCtx{}
		m := meta{APIVersion: accountable.APIVersion, WorkspaceID: src.WorkspaceID}
		b.ReportAllocs()
		for b.Loop() {
			fc := s.app.AcquireCtx(rc)
			if err := respond(fc, fiber.StatusOK, out, m); err != nil {
				b.Fatal(err)
			}
			s.app.ReleaseCtx(fc)
			rc.Response.Reset()
		}
	})
}

// heldContextStore answers the sources it holds, as the store read them.
type heldContextStore struct{ src accountable.ContextSources }

func (h heldContextStore) ReadContextSources(context.Context, string, accountable.ContextScopeRequest) (accountable.ContextSources, error) {
	return h.src, nil // Build leaves its sources as they are
}

// benchContextSources is the bench's context line's scope (cmd/bench/contextpack.go), as
// contextpack's BenchmarkBuild has it: the first task of the committed status-page
// initiative, with 12 pending and 4 decided decisions on the initiative, a full read of
// the busy workspace's open handoffs (more than the read limit), the task's few events and
// 8 artifacts; no runs or receipts. Its capsule is over the default budget, so it is
// trimmed as the line's is.
func benchContextSources() accountable.ContextSources {
	id := func(kind, i int) string { return fmt.Sprintf("0190c0de-%04x-7000-8000-%012x", kind, i) }
	at := accountable.Time{Time: time.Date(2026, 11, 27, 8, 0, 0, 123456000, time.UTC)}
	desc, agent := "Aggregate the components' checks.", "agent-engineering"
	cost := int64(0)
	s := accountable.ContextSources{
		WorkspaceID: id(0, 1), AsOfGlobalSequence: 100000,
		Scope: accountable.ContextScope{Kind: accountable.ContextScopeTask,
			Initiative: &accountable.ContextInitiative{Ref: accountable.Ref("initiative", id(1, 1)), Title: "Public status page",
				Summary: "Ship a public status page that shows the health of the API and its incidents.", Status: "active"},
			Workstream: &accountable.ContextWorkstream{Ref: accountable.Ref("workstream", id(2, 1)), Name: "Status API",
				Goal: "Expose component health and incidents as JSON.", Domain: "engineering", AgentName: &agent},
			Task: &accountable.ContextTask{Ref: accountable.Ref("task", id(3, 1)), Title: "Implement the health endpoint", Description: &desc,
				Status: "todo", Priority: "high", EstimatedCostCents: &cost, AggregateVersion: 1}},
	}
	urgencies := []string{"critical", "urgent", "urgent", "standard", "standard", "standard", "standard", "standard", "deferred", "standard", "urgent", "standard"}
	for i, u := range urgencies {
		s.Pending = append(s.Pending, accountable.ContextDecision{Ref: accountable.Ref("decision", id(4, i)),
			Summary: fmt.Sprintf("Status page question %d: pick the incident severity shown to the public", i+1),
			Status:  "pending", Provenance: "requested", Urgency: u})
	}
	for i := range 4 {
		status := "approved"
		if i == 3 {
			status = "declined"
		}
		s.Decided = append(s.Decided, accountable.ContextDecision{Ref: accountable.Ref("decision", id(5, i)),
			Summary: fmt.Sprintf("Decided %d: host the status page apart from the API", i+1), Status: status, Provenance: "decided", Urgency: "standard"})
	}
	for i := range accountable.ContextSectionReadLimit {
		due := accountable.Time{Time: at.Add(time.Duration(i) * time.Minute)}
		s.Handoffs = append(s.Handoffs, accountable.ContextHandoff{Ref: accountable.Ref("handoff", id(6, i)),
			Summary: fmt.Sprintf("Case %d: intake to triage", 9000+i), Status: "open", Priority: "normal", From: "intake", To: "triage", DueAt: &due})
	}
	s.MoreOfEach.OpenRisks = 1
	for i, typ := range []string{"task.created", "task.updated"} {
		s.Events = append(s.Events, accountable.ContextEvent{Ref: accountable.Ref("ledger_event", id(7, i)), EventType: typ, AggregateType: "task",
			AggregateID: id(3, 1), AggregateVersion: int64(2 - i), RecordedAt: at, EventHash: fmt.Sprintf("sha256:%064x", 0xabcdef*(i+1))})
	}
	for i := range 8 {
		s.Artifacts = append(s.Artifacts, accountable.ContextArtifact{Ref: accountable.Ref("artifact", id(8, i)),
			Summary: fmt.Sprintf("Status page note %d", i+1), ArtifactType: "document", Status: "draft", Version: 1})
	}
	return s
}
