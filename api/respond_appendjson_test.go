package api

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
)

// TestMetaAppendJSON: meta.appendJSON writes json.Marshal's bytes for metas with every
// field random (absent and present, strings with bytes encoding/json escapes), filled by
// reflection so a field it does not write fails here.
func TestMetaAppendJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	texts := []string{"", "1", "0190c7a2-1b2c-7d3e-8f40-123456789abc", "<a&b>", "\u2028\"\\\n\x01\xff", "current"}
	for range 5000 {
		var m meta
		v := reflect.ValueOf(&m).Elem()
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() == reflect.Pointer {
				if r.IntN(2) == 0 {
					continue
				}
				f.Set(reflect.New(f.Type().Elem()))
				f = f.Elem()
			}
			switch f.Kind() {
			case reflect.String:
				f.SetString(texts[r.IntN(len(texts))])
			case reflect.Int:
				f.SetInt(r.Int64N(1<<40) - 1<<39)
			case reflect.Bool:
				f.SetBool(r.IntN(2) == 0)
			default:
				t.Fatalf("meta.%s is a %s: fill it here (and write it in appendJSON)", v.Type().Field(i).Name, f.Type())
			}
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("%+v:\n got %s\nwant %s", m, got, want)
		}
	}
}

// respond writes a task (its own encoder, accountable.Task.AppendJSON) exactly as c.JSON
// writes its envelope, and fails as c.JSON fails.
func TestRespondWritesATaskAsTheEnvelopeWould(t *testing.T) {
	app := fiber.New(fiber.Config{JSONEncoder: json.Marshal})
	desc, id := "<b>&\u2028</b>\x00\xff", "0190c7a2-1b2c-7d3e-8f40-123456789abd"
	cost := int64(-7)
	due := accountable.TimeOf(time.Date(2027, 1, 2, 3, 4, 5, 6000, time.UTC))
	tasks := []accountable.Task{{}, benchTask(),
		{ID: id, Title: "\"quoted\"\t", Description: &desc, Status: "odd\n", Priority: accountable.PriorityUrgent, DueDate: &due,
			InitiativeID: &id, WorkstreamID: &id, MilestoneID: &id, Metadata: accountable.Object("{\"a\" : [1, \"<\u2029>\"],\n\"b\":{}}"),
			EstimatedCostCents: &cost, AggregateVersion: 3}}
	tasks = append(tasks, tasks[2].WithConcurrency())
	no := false
	metas := []meta{{APIVersion: "1"}, {APIVersion: accountable.APIVersion, WorkspaceID: id, Duplicate: &no}}
	write := func(f func(c *fiber.Ctx) error) (string, error) {
		c := app.AcquireCtx(&fasthttp.RequestCtx{})
		defer app.ReleaseCtx(c)
		err := f(c)
		return string(c.Response().Header.Header()) + string(c.Response().Body()), err
	}
	for _, task := range tasks {
		for _, m := range metas {
			got, err := write(func(c *fiber.Ctx) error { return respond(c, 200, task, m) })
			if err != nil {
				t.Fatal(err)
			}
			want, _ := write(func(c *fiber.Ctx) error { return c.Status(200).JSON(envelope{Data: task, Meta: m}) })
			if got != want {
				t.Fatalf("respond:\n got %s\nwant %s", got, want)
			}
		}
	}
	bad := tasks[1]
	bad.Metadata = accountable.Object(`{"a":`)
	_, got := write(func(c *fiber.Ctx) error { return respond(c, 200, bad, metas[0]) })
	_, want := write(func(c *fiber.Ctx) error { return c.Status(200).JSON(envelope{Data: bad, Meta: metas[0]}) })
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Fatalf("metadata that is not JSON: respond %v, c.JSON %v", got, want)
	}
}

// An answer that has a task's encoder only by embedding a task would be answered as the
// task alone: op refuses to declare it.
func TestAnEncoderHadByEmbeddingIsRefused(t *testing.T) {
	type taskAndMore struct {
		accountable.Task
		More string `json:"more"`
	}
	defer func() {
		if recover() == nil {
			t.Fatal("declared")
		}
	}()
	op(Operation{ID: "embedding", Method: fiber.MethodGet, Path: "/embedding"},
		func(*call, *struct{}) (taskAndMore, error) { return taskAndMore{}, nil })
}
