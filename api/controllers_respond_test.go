package api

import (
	"encoding/json"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
)

// A reconcile's first answer is the text the store kept of it for replays
// (controller_runs): written as it is, it is the very body encoding the result would
// write, HTML-escaped text, U+2028 and a proposal's free-form JSON included.
func TestRespondWritesAKeptControllerResultAsTheEnvelopeWould(t *testing.T) {
	app := fiber.New(fiber.Config{JSONEncoder: json.Marshal})
	proposal := accountable.Object(`{"records":[{"title":"<b>&</b>\u2028"}],"type":"engineering.unblock_work"}`)
	cursor, signal := "c<1>", "controller_signal:ab"
	res := accountable.ControllerResult{ControllerID: "domain.engineering", Domain: "engineering", Result: "proposal",
		LastSignalID: &signal, EventIDs: []string{"01a2088a-ed85-7a08-a1b9-ad05dba83f74"}, Proposal: &proposal,
		SourceHealth: accountable.SourceHealth{State: accountable.SourceHealthy, SourceCursor: &cursor, Limitations: []string{}},
		Limitations:  []string{"Shadow mode: nothing is dispatched."}}
	text, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	kept := res
	kept.RememberJSON(text)
	body := func(data any) string {
		c := app.AcquireCtx(&fasthttp.RequestCtx{})
		defer app.ReleaseCtx(c)
		if err := respond(c, 200, data, meta{APIVersion: "1", WorkspaceID: "01a2088a-ed85-7a08-a1b9-ad05dba83f75"}); err != nil {
			t.Fatal(err)
		}
		return string(c.Response().Body())
	}
	if got, want := body(kept), body(res); got != want {
		t.Fatalf("kept encoding:\n got  %s\n want %s", got, want)
	}
}
