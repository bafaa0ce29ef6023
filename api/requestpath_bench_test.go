package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The stages of POST /work/{id}/complete's own CPU in the service, each measured alone on
// the body make bench's complete line sends (issue 30: measure each stage, cut the
// biggest). PostgreSQL's share (two round trips, the commit) is make bench's to measure;
// these are what the service adds around it:
//
//	go test -run '^$' -bench RequestStages -benchmem ./api
//
// decode and validate are the body's decoding (go-json-experiment, through the type that
// adds workspace_id) and its rules; fingerprint the Idempotency-Key's request digest (RFC
// 8785 canonical JSON and SHA-256); respond the success envelope around the JSON the store
// made of the answer; log the request's line (slog JSON, as the service writes it before
// its buffer).
func BenchmarkRequestStages(b *testing.B) {
	body := []byte(`{"version_token":"0190c7a2-1b2c-7d3e-8f40-123456789abc:3","summary":"Shipped the quarterly report; the figures were checked against the ledger.","measured_duration_hours":1.5,"cost_cents":1200,"evidence":{"links":["https://example.com/pr/1234","https://example.com/reports/q3.pdf"],"notes":"Reviewed by finance."}}`)
	scoped := scopedBody(reflect.TypeFor[completeWorkRequest]())
	var in completeWorkRequest
	if _, err := decodeJSONBody(body, scoped, &in, false); err != nil {
		b.Fatal(err)
	}
	const taskID = "0190c7a2-1b2c-7d3e-8f40-123456789abc"
	in.workRef.TaskID = taskID

	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in completeWorkRequest
			if _, err := decodeJSONBody(body, scoped, &in, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := in.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fingerprint", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := canonical.DigestOf(requestFingerprint{Operation: "completeWork", Path: []string{taskID}, Body: &in}); err != nil {
				b.Fatal(err)
			}
		}
	})

	// The answer as the store hands it over: its JSON made once (accountable.Encoded).
	answer := accountable.WorkCompletion{TaskID: taskID, ReceiptID: "0190c7a2-1b2c-7d3e-8f40-123456789abd",
		Task:    accountable.Task{ID: taskID, Title: "Prepare the quarterly report", Status: accountable.TaskCompleted},
		Receipt: accountable.Receipt{ID: "0190c7a2-1b2c-7d3e-8f40-123456789abd", TaskID: taskID, Summary: *in.Summary}}
	text, err := json.Marshal(answer)
	if err != nil {
		b.Fatal(err)
	}
	answer.RememberJSON(text)
	app := fiber.New()
	rc := &fasthttp.RequestCtx{}
	b.Run("respond", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fc := app.AcquireCtx(rc)
			if err := respond(fc, fiber.StatusOK, answer, meta{APIVersion: accountable.APIVersion, WorkspaceID: "0190c7a2-1b2c-7d3e-8f40-123456789abe"}); err != nil {
				b.Fatal(err)
			}
			app.ReleaseCtx(fc)
			rc.Response.Reset()
		}
	})

	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	start := time.Now()
	b.Run("log", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			log.Log(context.Background(), slog.LevelInfo, "request", "request_id", "0190c7a2-1b2c-7d3e-8f40-123456789abf", "method", "POST",
				"path", "/api/v1/work/"+taskID+"/complete", "status", 200, "duration_ms", float64(time.Since(start).Microseconds())/1000,
				"workspace_id", "0190c7a2-1b2c-7d3e-8f40-123456789abe", "key_prefix", "ak_live_abcdefgh")
		}
	})
}
