package accountable

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Error codes. The catalogue below maps each to its HTTP status; GET /errors serves it.
const (
	ECodeValidationFailed         = "validation_failed"
	ECodeInvalidJSON              = "invalid_json"
	ECodeIdempotencyKeyInvalid    = "idempotency_key_invalid"
	ECodeIdempotencyKeyRequired   = "idempotency_key_required"
	ECodeUnsupportedAPIVersion    = "unsupported_api_version"
	ECodeUnauthorized             = "unauthorized"
	ECodeForbidden                = "forbidden"
	ECodeControllerDisabled       = "controller_disabled"
	ECodeNotFound                 = "not_found"
	ECodeRouteNotFound            = "route_not_found"
	ECodeMethodNotAllowed         = "method_not_allowed"
	ECodeBadRequest               = "bad_request"
	ECodeRequestTimeout           = "request_timeout"
	ECodeHeadersTooLarge          = "request_header_fields_too_large"
	ECodePayloadTooLarge          = "payload_too_large"
	ECodeUnsupportedMediaType     = "unsupported_media_type"
	ECodeTaskVersionStale         = "task_version_stale"
	ECodeVersionConflict          = "version_conflict"
	ECodeInvalidStateTransition   = "invalid_state_transition"
	ECodeIdempotencyKeyReused     = "idempotency_key_reused"
	ECodeIdempotencyInProgress    = "idempotency_request_in_progress"
	ECodeProposalDigestMismatch   = "proposal_digest_mismatch"
	ECodeProposalExpired          = "proposal_expired"
	ECodeProposalCommitted        = "proposal_already_committed"
	ECodeLifecycleBlocked         = "lifecycle_blocked"
	ECodeReceiptInvalid           = "receipt_invalid"
	ECodeRateLimited              = "rate_limited"
	ECodeGenerationInProgress     = "generation_in_progress"
	ECodeInternal                 = "internal_error"
	ECodeLedgerUnavailable        = "ledger_unavailable"
	ECodeWorkflowUnavailable      = "workflow_engine_unavailable"
	ECodeAuthorizationUnavailable = "workspace_authorization_unavailable"
	ECodeGenerationTimeout        = "generation_timeout"
	ECodeGenerationFailed         = "generation_failed"
	ECodeWriteConflict            = "write_conflict"
	ECodeResourceBusy             = "resource_busy"
	ECodeDeadlineExceeded         = "deadline_exceeded"
	ECodeWebhookLimitReached      = "webhook_limit_reached"
	ECodeNotOffered               = "not_offered"
)

// ErrorSpec describes one code of the catalogue.
type ErrorSpec struct {
	Code        string `json:"code"`
	Status      int    `json:"status"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

var catalogue = map[string]ErrorSpec{}

func define(code string, status int, title, description string) {
	catalogue[code] = ErrorSpec{Code: code, Status: status, Title: title, Description: description}
}

func init() {
	define(ECodeValidationFailed, 400, "Validation failed", "The request does not satisfy the operation's schema or rules; details.issues lists each problem with its JSON path.")
	define(ECodeInvalidJSON, 400, "Invalid JSON", "The request body is not well-formed JSON, or not a JSON object where one is required.")
	define(ECodeIdempotencyKeyInvalid, 400, "Invalid idempotency key", "The Idempotency-Key header must be 1-200 characters matching ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$.")
	define(ECodeIdempotencyKeyRequired, 400, "Idempotency key required", "This operation requires an Idempotency-Key header.")
	define(ECodeUnsupportedAPIVersion, 400, "Unsupported API version", "The Svc-Version header names a contract date this service does not serve.")
	define(ECodeUnauthorized, 401, "Unauthorized", "The bearer credential is missing, malformed, unknown or revoked. The body is the simple {error, message} form.")
	define(ECodeForbidden, 403, "Forbidden", "The credential is valid but may not perform this operation.")
	define(ECodeControllerDisabled, 403, "Controller disabled", "The domain controller is disabled for this workspace.")
	define(ECodeNotFound, 404, "Not found", "The resource does not exist or is not available to the caller (resources of other workspaces are reported the same way).")
	define(ECodeRouteNotFound, 404, "Route not found", "No operation is served at this path.")
	define(ECodeMethodNotAllowed, 405, "Method not allowed", "The path exists but does not accept this HTTP method.")
	define(ECodeBadRequest, 400, "Bad request", "The HTTP request is malformed.")
	define(ECodeRequestTimeout, 408, "Request timeout", "The request was not received in time.")
	define(ECodeHeadersTooLarge, 431, "Request header fields too large", "The request headers exceed the server's limit.")
	define(ECodePayloadTooLarge, 413, "Payload too large", "The request body exceeds the size limit.")
	define(ECodeUnsupportedMediaType, 415, "Unsupported media type", "Request bodies must be sent with Content-Type: application/json.")
	define(ECodeTaskVersionStale, 409, "Task version stale", "The work task version is stale; details.current_updated_at and details.current_aggregate_version give the current version.")
	define(ECodeVersionConflict, 409, "Version conflict", "The expected aggregate version does not match the current one.")
	define(ECodeInvalidStateTransition, 409, "Invalid state transition", "The resource's current state does not allow this action.")
	define(ECodeIdempotencyKeyReused, 409, "Idempotency key reused", "The Idempotency-Key was already used with a different request.")
	define(ECodeIdempotencyInProgress, 409, "Idempotent request in progress", "A request with this Idempotency-Key is still being processed; retry later.")
	define(ECodeProposalDigestMismatch, 409, "Proposal digest mismatch", "The proposal_digest does not match the stored proposal.")
	define(ECodeProposalExpired, 409, "Proposal expired", "The proposal expired before it was committed.")
	define(ECodeProposalCommitted, 409, "Proposal already committed", "The proposal was already committed.")
	define(ECodeLifecycleBlocked, 422, "Lifecycle blocked", "The lifecycle action is blocked; the body is the LifecycleResult with ok:false.")
	define(ECodeReceiptInvalid, 422, "Receipt invalid", "The receipt does not satisfy the receipt schema.")
	define(ECodeRateLimited, 429, "Rate limited", "Too many requests; retry after error.retryAfter seconds (also the Retry-After header).")
	define(ECodeGenerationInProgress, 429, "Generation in progress", "A generation is already running for this workspace; retry after error.retryAfter seconds.")
	define(ECodeInternal, 500, "Internal error", "An unexpected error occurred; it was logged with the request id.")
	define(ECodeLedgerUnavailable, 503, "Ledger unavailable", "The ledger database is unreachable; retry later.")
	define(ECodeWorkflowUnavailable, 503, "Workflow engine unavailable", "The workflow engine (Temporal) is unreachable; retry later.")
	define(ECodeAuthorizationUnavailable, 503, "Workspace authorization unavailable", "The workspace authorization could not be resolved; retry later.")
	define(ECodeWriteConflict, 409, "Write conflict", "The request kept conflicting with concurrent changes to the same data and was not applied; retry it.")
	define(ECodeResourceBusy, 409, "Resource busy", "Another request held a lock on this resource for longer than the server waits; nothing was changed; retry it.")
	define(ECodeWebhookLimitReached, 409, "Webhook limit reached", "The workspace has as many active webhook endpoints as the server allows "+
		"(details.limit); delete one (DELETE /webhooks/{webhookId}) before registering another.")
	// 501: "the server does not support the functionality required to fulfill the request"
	// (RFC 9110 section 15.6.2), which is what a client must hear from an operation of the
	// public API that this deployment declares but does not offer; not a fault, not
	// transient, and no retry changes it.
	define(ECodeNotOffered, 501, "Not offered", "This service does not offer the operation (a self-hosted service sells nothing, so "+
		"there is no checkout); nothing was changed, and retrying will not change the answer.")
	define(ECodeDeadlineExceeded, 504, "Deadline exceeded", "The request did not finish within the server's deadline for its kind of operation; nothing was changed.")
	define(ECodeGenerationTimeout, 504, "Generation timeout", "The generation did not finish in time.")
	define(ECodeGenerationFailed, 502, "Generation failed", "The planner could not make a valid plan within its retries; nothing was stored; retry the request.")
}

// ErrorCatalogue returns every error code with its status, sorted by status then code.
func ErrorCatalogue() []ErrorSpec {
	out := make([]ErrorSpec, 0, len(catalogue))
	for _, s := range catalogue {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Status != out[j].Status {
			return out[i].Status < out[j].Status
		}
		return out[i].Code < out[j].Code
	})
	return out
}

// ErrorSpecOf returns the catalogue entry of code.
func ErrorSpecOf(code string) (ErrorSpec, bool) {
	s, ok := catalogue[code]
	return s, ok
}

// ErrorStatus returns the HTTP status of code (500 for an unknown code).
func ErrorStatus(code string) int {
	if s, ok := catalogue[code]; ok {
		return s.Status
	}
	return 500
}

// Error is a domain error: a catalogued code, a message safe to show to the caller and
// optional details. Anything that is not an *Error reaches callers as internal_error.
// An *Error may be shared by every request that meets it (ErrLedgerUnavailable, errors
// kept in caches), so its fields are never changed once it is returned: decorating one
// (WithDetails, the error handler's requestId and retryAfter) works on a copy.
type Error struct {
	Code       string
	Message    string
	Details    map[string]any
	RetryAfter time.Duration // set on 429s
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e with details set; e itself is left as it is.
func (e *Error) WithDetails(d map[string]any) *Error {
	c := *e
	c.Details = d
	return &c
}

// ErrorCode returns the code of err when it is (or wraps) an *Error, otherwise internal_error.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ECodeInternal
}

// Issue is one problem found while validating a request.
type Issue struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Issues collects validation problems.
type Issues []Issue

// Add records a problem at path (a JSON Pointer such as /summary).
func (is *Issues) Add(path, format string, args ...any) {
	*is = append(*is, Issue{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Err returns a validation_failed error listing the issues, or nil when there are none.
func (is Issues) Err() error {
	if len(is) == 0 {
		return nil
	}
	return ValidationError(is...)
}

// ValidationError returns a validation_failed error carrying issues in details.issues.
func ValidationError(issues ...Issue) *Error {
	msg := "The request is invalid."
	if len(issues) == 1 {
		msg = "The request is invalid: " + issues[0].Path + ": " + issues[0].Message
	}
	return &Error{Code: ECodeValidationFailed, Message: msg, Details: map[string]any{"issues": Issues(issues)}}
}

// NotFound is the one not_found error for an unknown resource, identical whether the id
// was never issued or belongs to another workspace.
func NotFound(resource string) *Error {
	return Errorf(ECodeNotFound, "The %s was not found.", resource)
}

// ErrLedgerUnavailable is returned when the database cannot be reached.
var ErrLedgerUnavailable = &Error{Code: ECodeLedgerUnavailable, Message: "The ledger is temporarily unavailable; retry later."}

// ErrWorkflowUnavailable is returned when the workflow engine cannot be reached.
var ErrWorkflowUnavailable = &Error{Code: ECodeWorkflowUnavailable, Message: "The workflow engine is temporarily unavailable; retry later."}
