package api

import (
	"mime"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// isJSON accepts application/json and application/*+json, with parameters.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == fiber.MIMEApplicationJSON || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// requestIsJSON reports whether the request's Content-Type is JSON (isJSON), read without
// a copy: the plain application/json most clients send needs no parsing.
func requestIsJSON(c *fiber.Ctx) bool {
	ct := c.Request().Header.ContentType()
	if string(ct) == fiber.MIMEApplicationJSON {
		return true
	}
	return isJSON(string(ct))
}

// contentEncoded reports whether the request declares a Content-Encoding other than
// identity (in any of its Content-Encoding headers).
func contentEncoded(c *fiber.Ctx) bool {
	encoded := false
	c.Request().Header.VisitAll(func(k, v []byte) {
		if !strings.EqualFold(string(k), fiber.HeaderContentEncoding) {
			return
		}
		for _, e := range strings.Split(string(v), ",") {
			if e = strings.TrimSpace(e); e != "" && !strings.EqualFold(e, "identity") {
				encoded = true
			}
		}
	})
	return encoded
}

// queryAll returns every value of a query parameter: repeated, or comma-separated.
func queryAll(c *fiber.Ctx, name string) []string {
	var out []string
	for _, raw := range c.Context().QueryArgs().PeekMulti(name) {
		for _, v := range strings.Split(string(raw), ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}
