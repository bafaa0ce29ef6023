package api

import (
	"errors"
	"maps"
	"math"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// meta is the meta object of the success envelope.
type meta struct {
	APIVersion  string  `json:"apiVersion"`
	WorkspaceID string  `json:"workspaceId,omitempty" format:"uuid"`
	Count       *int    `json:"count,omitempty" minimum:"0"`
	Duplicate   *bool   `json:"duplicate,omitempty"`
	NextCursor  *string `json:"nextCursor,omitempty"`
	HasMore     *bool   `json:"hasMore,omitempty"`
	Limit       *int    `json:"limit,omitempty" minimum:"1"`
	// ProjectionStatus says where a read came from (GET /launches/{id}: "current", the
	// committed state itself).
	ProjectionStatus *string `json:"projectionStatus,omitempty"`
	// RequiresConfirmation is true on a discovery proposal: people confirm it.
	RequiresConfirmation *bool `json:"requiresConfirmation,omitempty"`
}

type envelope struct {
	Data any  `json:"data"`
	Meta meta `json:"meta"`
}

// newMeta returns the meta of a response to c: the workspace when authenticated.
func newMeta(c *fiber.Ctx) meta {
	m := meta{APIVersion: accountable.APIVersion}
	if p, ok := c.Locals(localPrincipal).(accountable.Principal); ok {
		m.WorkspaceID = p.WorkspaceID
	}
	return m
}

// appendJSON appends m as json.Marshal encodes it (the meta of every success answer):
// TestMetaAppendJSON compares the two on random metas, and fails on a field added to
// meta but not here.
func (m meta) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"apiVersion":`...)
	buf = accountable.AppendJSONString(buf, m.APIVersion)
	if m.WorkspaceID != "" {
		buf = append(buf, `,"workspaceId":`...)
		buf = accountable.AppendJSONString(buf, m.WorkspaceID)
	}
	if m.Count != nil {
		buf = append(buf, `,"count":`...)
		buf = strconv.AppendInt(buf, int64(*m.Count), 10)
	}
	if m.Duplicate != nil {
		buf = append(buf, `,"duplicate":`...)
		buf = strconv.AppendBool(buf, *m.Duplicate)
	}
	if m.NextCursor != nil {
		buf = append(buf, `,"nextCursor":`...)
		buf = accountable.AppendJSONString(buf, *m.NextCursor)
	}
	if m.HasMore != nil {
		buf = append(buf, `,"hasMore":`...)
		buf = strconv.AppendBool(buf, *m.HasMore)
	}
	if m.Limit != nil {
		buf = append(buf, `,"limit":`...)
		buf = strconv.AppendInt(buf, int64(*m.Limit), 10)
	}
	if m.ProjectionStatus != nil {
		buf = append(buf, `,"projectionStatus":`...)
		buf = accountable.AppendJSONString(buf, *m.ProjectionStatus)
	}
	if m.RequiresConfirmation != nil {
		buf = append(buf, `,"requiresConfirmation":`...)
		buf = strconv.AppendBool(buf, *m.RequiresConfirmation)
	}
	return append(buf, '}')
}

// jsonAppenderErr is an answer with a hand-written encoder of exactly json.Marshal's
// bytes that may fail where json.Marshal fails (a task: metadata that is not JSON).
type jsonAppenderErr interface {
	AppendJSON(buf []byte) ([]byte, error)
}

// respond writes the success envelope. A command's first answer carries the JSON the
// store already made of it (accountable.Encoded), which is written as it is instead of
// being encoded again; a replay is encoded anew. An answer with its own encoder
// (jsonAppenderErr: a task read) is encoded by it, without encoding/json's reflective
// pass; the meta always is (meta.appendJSON). The bytes are c.JSON's either way.
func respond(c *fiber.Ctx, status int, data any, m meta) error {
	enc, encoded := data.(interface{ EncodedJSON() []byte })
	encoded = encoded && enc.EncodedJSON() != nil && (m.Duplicate == nil || !*m.Duplicate)
	a, appends := data.(jsonAppenderErr)
	if !encoded && !appends {
		return c.Status(status).JSON(envelope{Data: data, Meta: m})
	}
	var err error
	writePooledBody(c.Status(status), func(body []byte) []byte {
		body = append(body, `{"data":`...)
		if encoded {
			body = append(body, enc.EncodedJSON()...)
		} else if body, err = a.AppendJSON(body); err != nil {
			return nil
		}
		return append(m.appendJSON(append(body, `,"meta":`...)), '}')
	})
	return err
}

// writePooledBody answers the JSON text write appends to the buffer it is given (nothing
// when it returns nil), written into one of bodyBuffers and copied into the response's own
// pooled body, so that the buffer goes back to the pool.
func writePooledBody(c *fiber.Ctx, write func(buf []byte) []byte) {
	bp := bodyBuffers.Get().(*[]byte)
	body := write((*bp)[:0])
	if body != nil {
		c.Response().SetBody(body)
		c.Response().Header.SetContentType(fiber.MIMEApplicationJSON) // as c.JSON sets it
		if cap(body) <= maxPooledBody {
			*bp = body[:0]
		}
	}
	bodyBuffers.Put(bp)
}

// bodyBuffers are the buffers respond writes answers into before the response copies
// them into its own pooled body: an answer allocated anew each request (a completion's is
// about 2 KiB) was, with the collection it caused, a tenth of a write's CPU in the process.
// A buffer grown past maxPooledBody (a long list, a context pack) is left to the collector.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxPooledBody = 64 << 10

// errorEnvelope is the body of every failed response but a 401.
type errorEnvelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code       string           `json:"code"`
	Message    string           `json:"message"`
	Details    map[string]any   `json:"details"`
	RequestID  string           `json:"requestId" minLength:"1"`
	Timestamp  accountable.Time `json:"timestamp"`
	DocsURL    string           `json:"docsUrl" format:"uri"`
	RetryAfter *int             `json:"retryAfter,omitempty" minimum:"1"`
}

// unauthorizedBody is the specification's simple body of a 401.
type unauthorizedBody struct {
	Error   string `json:"error"`
	Message string `json:"message" minLength:"1"`
}

// fiberErrorCodes maps errors Fiber raises itself to catalogue codes.
var fiberErrorCodes = map[int]string{
	fiber.StatusNotFound:                    accountable.ECodeRouteNotFound,
	fiber.StatusMethodNotAllowed:            accountable.ECodeMethodNotAllowed,
	fiber.StatusRequestEntityTooLarge:       accountable.ECodePayloadTooLarge,
	fiber.StatusUnsupportedMediaType:        accountable.ECodeUnsupportedMediaType,
	fiber.StatusBadRequest:                  accountable.ECodeBadRequest,
	fiber.StatusRequestTimeout:              accountable.ECodeRequestTimeout,
	fiber.StatusRequestHeaderFieldsTooLarge: accountable.ECodeHeadersTooLarge,
}

// handleError is the one place errors become responses: the 401 simple body for
// authentication failures, the error envelope for everything else. Unknown errors are
// logged with the request id and answered as internal_error without details.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	id := requestID(c)
	var unauthorized errUnauthorized
	if errors.As(err, &unauthorized) {
		// The challenge points an OAuth client to the protected resource's metadata (RFC
		// 9728 section 5.1): the MCP endpoint's, or the API's.
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="accountable", resource_metadata="`+s.resourceMetadataURL(c.Path())+`"`)
		return c.Status(fiber.StatusUnauthorized).JSON(unauthorizedBody{Error: "Unauthorized", Message: unauthorized.message})
	}
	// The error may be shared by concurrent requests (a package variable, a cached
	// answer): the answer is made from a copy, never by changing it.
	var ae accountable.Error
	var shared *accountable.Error
	var fe *fiber.Error
	switch {
	case errors.As(err, &shared):
		ae = *shared
		ae.Details = maps.Clone(shared.Details)
	case errors.As(err, &fe):
		code, ok := fiberErrorCodes[fe.Code]
		switch {
		case !ok && fe.Code < 500:
			code = accountable.ECodeBadRequest // a client error Fiber raised that has no code of its own
		case !ok:
			code = accountable.ECodeInternal
		}
		ae = accountable.Error{Code: code, Message: fe.Message}
		if spec, ok := accountable.ErrorSpecOf(code); ok && code != accountable.ECodeInternal {
			ae.Message = spec.Description
		}
		if code == accountable.ECodeRouteNotFound {
			ae.Message = "No operation is served at " + c.Method() + " " + c.Path() + "."
		}
	default:
		s.log.Error("internal error", "request_id", id, "method", c.Method(), "path", c.Path(), "err", err)
		ae = *accountable.Errorf(accountable.ECodeInternal, "An unexpected error occurred; it was logged with request id %s.", id)
	}
	status := accountable.ErrorStatus(ae.Code)
	if status == fiber.StatusRequestEntityTooLarge || status == fiber.StatusRequestHeaderFieldsTooLarge {
		closeAfterUnreadBody(c) // answered before the body, or the rest of the head, was read
	}
	var retryAfter *int
	if status == fiber.StatusTooManyRequests {
		secs := max(int(math.Ceil(ae.RetryAfter.Seconds())), 1)
		retryAfter = &secs
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
	}
	if f := s.failureOf(c, ae.Code); f != nil {
		return c.Status(status).JSON(f.write(ae, status))
	}
	body := errorBody{
		Code: ae.Code, Message: ae.Message, Details: ae.Details, RequestID: id,
		Timestamp: accountable.NowTime(),
		DocsURL:   s.cfg.SiteURL + V1Root + "/errors#" + ae.Code, RetryAfter: retryAfter,
	}
	if body.Details == nil {
		body.Details = map[string]any{}
	}
	return c.Status(status).JSON(errorEnvelope{Error: body})
}
