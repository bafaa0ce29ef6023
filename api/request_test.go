package api

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// TestRequestIsJSON checks that the request's Content-Type read without a copy is judged
// as isJSON judges the header's value.
func TestRequestIsJSON(t *testing.T) {
	app := fiber.New(fiber.Config{Immutable: true})
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "Application/JSON", "application/json ",
		"application/merge-patch+json", "application/jsonx", "text/json", "application/json;", "application/json; q", "text/plain", "application/json\x00"} {
		rc := &fasthttp.RequestCtx{}
		if ct != "" {
			rc.Request.Header.SetContentType(ct)
		}
		c := app.AcquireCtx(rc)
		if got, want := requestIsJSON(c), isJSON(c.Get(fiber.HeaderContentType)); got != want {
			t.Errorf("Content-Type %q: %v, isJSON says %v", ct, got, want)
		}
		app.ReleaseCtx(c)
	}
}
