package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/contextpack"
	"github.com/accountablework/accountable/contextpack/contextpacktest"
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
	src := contextpacktest.BenchSources()
	key, keys := heldKey(src.WorkspaceID)
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
		benchAnswers(b, handler, rc)
		b.ReportMetric(float64(len(rc.Response.Body())), "answer-bytes")
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
