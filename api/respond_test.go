package api

import (
	"encoding/json"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
)

// A result that carries the store's encoding of itself is written exactly as encoding the
// envelope would write it; a replay is encoded anew (its kept encoding, if any, is not
// used).
func TestRespondWritesAKeptEncodingAsTheEnvelopeWould(t *testing.T) {
	app := fiber.New(fiber.Config{JSONEncoder: json.Marshal})
	res := accountable.WorkCompletion{TaskID: "01a2088a-ed85-7a08-a1b9-ad05dba83f74", Task: accountable.Task{Title: "<b>&</b>"},
		Receipt: accountable.Receipt{Summary: "done\u2028", Evidence: accountable.Object(`{"a":1}`)}}
	text, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	kept := res
	kept.RememberJSON(text)
	no := false
	body := func(data any, m meta) string {
		c := app.AcquireCtx(&fasthttp.RequestCtx{})
		defer app.ReleaseCtx(c)
		if err := respond(c, 201, data, m); err != nil {
			t.Fatal(err)
		}
		if ct := string(c.Response().Header.ContentType()); ct != fiber.MIMEApplicationJSON {
			t.Fatalf("content type %q", ct)
		}
		return string(c.Response().Body())
	}
	m := meta{APIVersion: "1", WorkspaceID: "01a2088a-ed85-7a08-a1b9-ad05dba83f75", Duplicate: &no}
	if got, want := body(kept, m), body(res, m); got != want {
		t.Fatalf("kept encoding:\n got  %s\n want %s", got, want)
	}
	// A replay flips duplicate: the kept text (duplicate false) must not be written.
	yes := true
	kept.Duplicate = true
	m.Duplicate = &yes
	replayed := body(kept, m)
	var decoded struct {
		Data struct {
			Duplicate bool `json:"duplicate"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(replayed), &decoded); err != nil || !decoded.Data.Duplicate {
		t.Fatalf("replay answered %s (%v)", replayed, err)
	}
}
