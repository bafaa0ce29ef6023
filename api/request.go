package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"mime"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// decodeBody checks the content type, validates the body against the named request schema
// of the OpenAPI document, decodes it into dst and applies a body workspace_id.
func (s *Server) decodeBody(c *fiber.Ctx, schema string, dst any) error {
	body := c.Body()
	if len(body) > 0 && !isJSON(c.Get(fiber.HeaderContentType)) {
		return accountable.Errorf(accountable.ECodeUnsupportedMediaType, "Send the request body as JSON with Content-Type: application/json.")
	}
	obj, canonical, err := decodeJSON(s.bodies[schema], body, dst)
	if err != nil {
		return err
	}
	c.Locals(localCanonicalBody, canonical)
	if ws, ok := obj["workspace_id"].(string); ok {
		if q := c.Query("workspace_id"); q != "" && !strings.EqualFold(q, ws) {
			return accountable.ValidationError(accountable.Issue{Path: "/workspace_id", Message: "differs from the workspace_id query parameter"})
		}
		return s.selectWorkspace(c, "/workspace_id", ws)
	}
	return nil
}

// isJSON accepts application/json and application/*+json, with parameters.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == fiber.MIMEApplicationJSON || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// idempotency reads the Idempotency-Key header of a command (after decodeBody). The request
// digest covers the operation, its path parameters and the canonical (RFC 8785) body, so
// the same request sent with other whitespace or key order is still the same request.
func idempotency(c *fiber.Ctx, operation string, required bool, params ...string) (*accountable.Idempotency, error) {
	key := c.Get(headerIdempotencyKey)
	if key == "" {
		if required {
			return nil, accountable.Errorf(accountable.ECodeIdempotencyKeyRequired, "This operation requires an Idempotency-Key header.")
		}
		return nil, nil
	}
	if !accountable.ValidIdempotencyKey(key) {
		return nil, accountable.Errorf(accountable.ECodeIdempotencyKeyInvalid,
			"The Idempotency-Key must be 1-200 characters matching ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$.")
	}
	canon, ok := c.Locals(localCanonicalBody).([]byte)
	if !ok {
		return nil, errors.New("api: idempotency before decodeBody") // a handler bug: decode first
	}
	fingerprint, err := json.Marshal(map[string]any{"operation": operation, "params": params, "body": json.RawMessage(canon)})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(fingerprint)
	return &accountable.Idempotency{Key: key, Operation: operation, RequestDigest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// pathUUID reads a UUID path parameter; a malformed one is a validation error.
func pathUUID(c *fiber.Ctx, name string) (string, error) {
	v := c.Params(name)
	if !accountable.ValidUUID(v) {
		return "", accountable.ValidationError(accountable.Issue{Path: name, Message: "must be a UUID"})
	}
	return accountable.NormalizeUUID(v), nil
}

// queryLimit reads the limit query parameter (1-1000, default 100).
func queryLimit(c *fiber.Ctx) (int, error) {
	raw := c.Query("limit")
	if raw == "" {
		return accountable.DefaultPageLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > accountable.MaxPageLimit {
		return 0, accountable.ValidationError(accountable.Issue{Path: "limit", Message: "must be an integer from 1 to 1000"})
	}
	return n, nil
}

// queryAll returns every value of a repeatable query parameter (also comma-separated).
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
