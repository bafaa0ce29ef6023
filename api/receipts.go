package api

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/receipt"
	receiptschema "github.com/accountablework/accountable/receipt/schema"
)

// ReceiptStore is what the Receipt import area needs.
type ReceiptStore interface {
	ImportReceipt(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in receipt.ImportReceipt) (receipt.ReceiptImport, bool, error)
	ImportedReceipt(ctx context.Context, workspaceID, id string) (receipt.ImportedReceipt, error)
}

// The Receipt validation and Receipt import areas: Agent Work Receipts
// (agent-work-receipt/v0.1) checked account-free, and imported into a workspace as
// producer-reported claims. The rules are package receipt's; the schema stage is
// receipt/schema's.

const (
	opImportReceipt = "importReceipt"
	receiptsPath    = "/agent-work-receipts"
)

// receiptMember is the member of an import's body that holds the receipt document: the
// public clients send {receipt, workspace_id}.
const receiptMember = "receipt"

// receiptDocumentSchema describes the receipt document: the body of the validate
// operation, the receipt member of the import's.
var receiptDocumentSchema = map[string]any{
	"type": "object",
	"description": "An Agent Work Receipt document (" + receipt.ReceiptSchemaVersion + "), as a JSON object. Its JSON " +
		"Schema (draft 2020-12) is " + receipt.ReceiptSchemaURL + "; GET " + V1Root + receiptsPath + "/validate says what " +
		"else is checked.",
}

// receiptArea serves the two areas with one validator, whose schema is compiled once.
type receiptArea struct {
	s         *Server
	validator receipt.ReceiptValidator
}

// receiptStore is the store of the Receipt import area.
var receiptStore = needsStore[ReceiptStore]()

func init() { servesOperations(120, (*Server).receiptOperations) }

// receiptOperations are the Receipt validation and Receipt import areas.
func (s *Server) receiptOperations() []operation {
	schema, err := receiptschema.Load()
	if err != nil { // the schema is embedded in the binary: only a broken build gets here
		panic(fmt.Sprintf("api: the receipt schema: %v", err))
	}
	a := &receiptArea{s: s, validator: receipt.ReceiptValidator{Schema: schema, MaxBytes: s.cfg.BodyLimit, Keys: s.cfg.ReceiptSignerKeys}}
	return []operation{
		op(Operation{ID: "describeReceiptValidation", Method: fiber.MethodGet, Path: receiptsPath + "/validate", Area: "Receipt validation",
			Public: true, Bare: true,
			Summary: "What receipt validation checks (account-free): the format, the limits, the stages and their issue codes, " +
				"the integrity checks, and how to validate or import a receipt."}, a.describe),
		op(Operation{ID: "validateReceipt", Method: fiber.MethodPost, Path: receiptsPath + "/validate", Area: "Receipt validation",
			Public: true, Pure: true, Bare: true, BareStatuses: []int{fiber.StatusUnprocessableEntity}, Document: true, DocumentSchema: receiptDocumentSchema,
			Summary: "Validate an Agent Work Receipt, sent as the body itself (account-free; nothing is stored): 200 {ok, valid: true, receipt, integrity, " +
				"persistence} for a valid one, 422 {ok: false, valid: false, issues (sorted by path, code and message; at most 100), " +
				"issue_count, issues_truncated} for an invalid one."}, a.validate),
		op(Operation{ID: opImportReceipt, Method: fiber.MethodPost, Path: receiptsPath, Area: "Receipt import",
			Status: fiber.StatusCreated, Idempotency: OptionalIdempotency, Document: true, DocumentMember: receiptMember,
			DocumentSchema: receiptDocumentSchema, Errors: []string{accountable.ECodeReceiptInvalid},
			Summary: "Import an Agent Work Receipt into the workspace as producer-reported claims (receipt.imported). The body is " +
				"{receipt, workspace_id?}: receipt is the document, validated exactly as POST /agent-work-receipts/validate validates " +
				"a bare one (else 422 receipt_invalid, details.issues, each path a JSON Pointer into the body: /receipt/...); a body " +
				"without a receipt object is 400 validation_failed at /receipt. data is {ok, receipt_id, external_receipt_id, " +
				"schema_version, idempotent, imported_at}. Without an Idempotency-Key the document's digest is the key, so importing " +
				"the same document again answers 200 with idempotent true and the first import's imported_at; a document whose " +
				"receipt_id the workspace has imported before answers that import when it is the same document (200, idempotent) " +
				"and 409 idempotency_key_reused when it is another."}, a.importReceipt),
		op(Operation{ID: "getImportedReceipt", Method: fiber.MethodGet, Path: receiptsPath + "/{receiptId}", Area: "Receipt import",
			Summary: "Read an imported receipt: the document as imported, the receipt.imported event that recorded it and, once a signed " +
				"checkpoint holds that event, its inclusion proof in the workspace's transparency log (verifiable offline with the log's public key).",
			Description: "ledger_proof is null for the seconds between the import and the first checkpoint that holds its event. To check " +
				"it offline: the RFC 8785 canonical JSON of payload has the digest ledger_proof.entry names (payloadDigest), the " +
				"canonical JSON of document has the digest payload.document_digest, the SHA-256 of the entry is event_hash, and the " +
				"inclusion proof holds the entry in the checkpoint the log's key signed (accountable ledger audit --receipt)."},
			a.getImportedReceipt),
	}
}

// ReceiptValidationInfo is GET /agent-work-receipts/validate.
type ReceiptValidationInfo struct {
	SchemaVersion     string               `json:"schema_version"`
	SchemaURL         string               `json:"schema_url" format:"uri"`
	JSONSchemaDialect string               `json:"json_schema_dialect" format:"uri"`
	Limits            ReceiptLimits        `json:"limits"`
	Stages            []ReceiptStage       `json:"stages" description:"What is checked, in order; a stage runs only when the ones before found nothing."`
	Integrity         ReceiptIntegrityInfo `json:"integrity"`
	Validate          ReceiptHowTo         `json:"validate"`
	Import            ReceiptHowTo         `json:"import"`
	Persistence       ReceiptPersistence   `json:"persistence"`
}

// ReceiptLimits bound what validation reads.
type ReceiptLimits struct {
	MaxBytes  int `json:"max_bytes" description:"The largest document (the server's body limit: a larger body is refused with 413 payload_too_large before it is read)."`
	MaxDepth  int `json:"max_depth" description:"Objects and arrays nested at most this deep (input.depth)."`
	MaxNodes  int `json:"max_nodes" description:"Values (objects, arrays, strings, numbers, literals) at most (input.nodes)."`
	MaxIssues int `json:"max_issues" description:"Issues listed at most; issue_count counts them all."`
}

// ReceiptStage is one stage of validation.
type ReceiptStage struct {
	Stage       string        `json:"stage" enum:"input,schema,semantic,integrity"`
	Description string        `json:"description"`
	Codes       []ReceiptRule `json:"codes"`
}

// ReceiptRule is an issue code and what it means.
type ReceiptRule struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

// ReceiptIntegrityInfo says how the integrity block is checked.
type ReceiptIntegrityInfo struct {
	AffectsValidity    bool     `json:"affects_validity" description:"Always false: integrity is reported beside a valid receipt, never folded into its validity."`
	Canonicalization   string   `json:"canonicalization"`
	HashScope          string   `json:"hash_scope"`
	SignatureProfile   string   `json:"signature_profile"`
	SignatureAlgorithm string   `json:"signature_algorithm"`
	TrustedKeyIDs      []string `json:"trusted_key_ids" description:"The key_ids of the signer keys this service verifies with (RECEIPT_SIGNER_KEYS)."`
	ContentHashStates  []string `json:"content_hash_states"`
	CryptographicState []string `json:"cryptographic_states"`
	TrustStates        []string `json:"trust_states"`
	Description        string   `json:"description"`
}

// ReceiptHowTo says how to call an operation.
type ReceiptHowTo struct {
	Method         string `json:"method"`
	Path           string `json:"path"`
	ContentType    string `json:"content_type"`
	Authentication string `json:"authentication" enum:"none,bearer"`
	Body           string `json:"body"`
	Answers        string `json:"answers"`
}

// ReceiptPersistence says what validation keeps.
type ReceiptPersistence struct {
	Stored                       bool `json:"stored" description:"Always false: validation stores nothing."`
	ImportRequiresAuthentication bool `json:"import_requires_authentication" description:"Always true: POST /agent-work-receipts takes a bearer key."`
}

var receiptPersistence = ReceiptPersistence{Stored: false, ImportRequiresAuthentication: true}

// describe: GET /agent-work-receipts/validate (account-free).
func (a *receiptArea) describe(c *call, _ *struct{}) (ReceiptValidationInfo, error) {
	semantic := make([]ReceiptRule, 0, len(receipt.ReceiptSemanticRules))
	for _, code := range slices.Sorted(maps.Keys(receipt.ReceiptSemanticRules)) {
		semantic = append(semantic, ReceiptRule{Code: code, Description: receipt.ReceiptSemanticRules[code]})
	}
	keys := a.validator.Keys.IDs()
	root := a.s.cfg.SiteURL + V1Root
	return ReceiptValidationInfo{
		SchemaVersion: receipt.ReceiptSchemaVersion, SchemaURL: receipt.ReceiptSchemaURL,
		JSONSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
		Limits: ReceiptLimits{MaxBytes: a.validator.MaxBytes, MaxDepth: receipt.MaxReceiptDepth, MaxNodes: receipt.MaxReceiptNodes,
			MaxIssues: receipt.MaxReceiptIssues},
		Stages: []ReceiptStage{
			{Stage: "input", Description: "One streaming pass over the JSON text before anything is decoded; it stops at the first problem.",
				Codes: []ReceiptRule{
					{receipt.ReceiptInputSize, "The document is larger than max_bytes."},
					{receipt.ReceiptInputJSON, "The body is not one well-formed JSON value (or is empty)."},
					{receipt.ReceiptInputUnicode, "Invalid UTF-8, an unpaired UTF-16 surrogate escape, or U+0000 (which a stored receipt cannot carry)."},
					{receipt.ReceiptInputNumber, "A number beyond the range of an IEEE-754 double (I-JSON)."},
					{receipt.ReceiptInputDepth, "Objects and arrays nested deeper than max_depth."},
					{receipt.ReceiptInputNodes, "More values than max_nodes."},
					{receipt.ReceiptInputDuplicateMember, "An object names a member twice (after escapes are decoded); the path is the repeat's."},
				}},
			{Stage: "schema", Description: "The format's JSON Schema (draft 2020-12), formats asserted (date-time, uri-reference). Each " +
				"leaf cause is an issue schema.<keyword> at the JSON Pointer of the value (of the member itself for required and " +
				"additionalProperties); of the alternatives of anyOf and oneOf, those the value's type rules out are left out and " +
				"only the closest of the others is reported.",
				Codes: []ReceiptRule{{"schema.<keyword>", "The keyword the value breaks: required, additionalProperties, type, const, " +
					"enum, format, pattern, minLength, maxLength, minItems, maxItems, minimum, maximum, not, oneOf."}}},
			{Stage: "semantic", Description: "The rules the schema cannot say.", Codes: semantic},
			{Stage: "integrity", Description: "Reported beside a valid receipt (integrity), never an issue.", Codes: []ReceiptRule{}},
		},
		Integrity: ReceiptIntegrityInfo{AffectsValidity: false, Canonicalization: receipt.ReceiptCanonicalization,
			HashScope: receipt.ReceiptHashScope, SignatureProfile: receipt.ReceiptSignatureProfile, SignatureAlgorithm: "ed25519",
			TrustedKeyIDs:      append([]string{}, keys...),
			ContentHashStates:  enumStrings(receipt.ContentHashState("").Enum()),
			CryptographicState: enumStrings(receipt.CryptographicState("").Enum()),
			TrustStates:        enumStrings(receipt.TrustState("").Enum()),
			Description: "content_hash: SHA-256 of the RFC 8785 canonical JSON of the receipt without its integrity member, " +
				"against the declared one. signatures: Ed25519 over the canonical agent-work-receipt-signature/v0.1 payload " +
				"(the declared content hash and the signature's protected header); verified only with a key of trusted_key_ids " +
				"(else not_checked), whose signer is then trusted; an unknown key_id is trust_state unknown."},
		Validate: ReceiptHowTo{Method: fiber.MethodPost, Path: root + receiptsPath + "/validate", ContentType: fiber.MIMEApplicationJSON,
			Authentication: "none", Body: "The receipt document itself.",
			Answers: "200 {ok, valid, schema_version, schema_url, receipt, integrity, persistence}; 422 {ok, valid, schema_version, schema_url, issues, issue_count, issues_truncated}."},
		Import: ReceiptHowTo{Method: fiber.MethodPost, Path: root + receiptsPath, ContentType: fiber.MIMEApplicationJSON,
			Authentication: "bearer", Body: "{\"receipt\": <the receipt document>, \"workspace_id\": <optional: one of your workspaces>}; " +
				"an Idempotency-Key is optional (the document's digest otherwise).",
			Answers: "201 {data: {ok, receipt_id, external_receipt_id, schema_version, idempotent, imported_at}, meta}; 200 for the same " +
				"document again (idempotent true, the first import's imported_at); 400 validation_failed at /receipt without a receipt " +
				"object; 422 receipt_invalid (details.issues at /receipt/...)."},
		Persistence: receiptPersistence,
	}, nil
}

func enumStrings(values []any) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// ReceiptValidationResult is the answer of POST /agent-work-receipts/validate: receipt,
// integrity and persistence for a valid receipt (200), issues, issue_count and
// issues_truncated for an invalid one (422).
type ReceiptValidationResult struct {
	OK              bool                      `json:"ok"`
	Valid           bool                      `json:"valid"`
	SchemaVersion   string                    `json:"schema_version"`
	SchemaURL       string                    `json:"schema_url" format:"uri"`
	Receipt         *receipt.ReceiptSummary   `json:"receipt,omitzero"`
	Integrity       *receipt.ReceiptIntegrity `json:"integrity,omitzero"`
	Persistence     *ReceiptPersistence       `json:"persistence,omitzero"`
	Issues          []receipt.ReceiptIssue    `json:"issues,omitzero" maxItems:"100"`
	IssueCount      *int                      `json:"issue_count,omitzero" minimum:"1"`
	IssuesTruncated *bool                     `json:"issues_truncated,omitzero"`
}

// validate: POST /agent-work-receipts/validate (account-free).
func (a *receiptArea) validate(c *call, _ *struct{}) (ReceiptValidationResult, error) {
	res := a.validator.Validate(c.document())
	out := ReceiptValidationResult{SchemaVersion: receipt.ReceiptSchemaVersion, SchemaURL: receipt.ReceiptSchemaURL}
	if !res.Valid() {
		count, truncated := res.IssueCount, res.Truncated()
		out.Issues, out.IssueCount, out.IssuesTruncated = res.Issues, &count, &truncated
		c.status = fiber.StatusUnprocessableEntity
		return out, nil
	}
	summary, persistence := res.Receipt.Summary(), receiptPersistence
	out.OK, out.Valid, out.Receipt, out.Integrity, out.Persistence = true, true, &summary, &res.Integrity, &persistence
	return out, nil
}

// importReceipt: POST /agent-work-receipts. The document is validated as a bare one is;
// its issues' paths point into the body, where it is the member receipt.
type importedReceiptRef struct {
	ReceiptID string `json:"-" path:"receiptId" format:"uuid" description:"The imported receipt's id in this service (receipt_id of the import's answer)."`
}

// getImportedReceipt: GET /agent-work-receipts/{receiptId}.
func (a *receiptArea) getImportedReceipt(c *call, in *importedReceiptRef) (receipt.ImportedReceipt, error) {
	r, err := receiptStore.of(a.s).ImportedReceipt(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.ReceiptID))
	if err != nil {
		return r, err
	}
	r.LedgerProof, err = a.s.newestProof(c, r.EventID)
	return r, err
}

func (a *receiptArea) importReceipt(c *call, _ *struct{}) (receipt.ReceiptImport, error) {
	res := a.validator.Validate(c.document())
	if !res.Valid() {
		for i := range res.Issues {
			res.Issues[i].Path = "/" + receiptMember + res.Issues[i].Path
		}
		first := res.Issues[0]
		return receipt.ReceiptImport{}, accountable.Errorf(accountable.ECodeReceiptInvalid,
			"The receipt is not a valid %s document (%d issue(s); details.issues lists them): %s: %s", receipt.ReceiptSchemaVersion,
			res.IssueCount, first.Path, first.Message).WithDetails(map[string]any{
			"schema_version": receipt.ReceiptSchemaVersion, "schema_url": receipt.ReceiptSchemaURL,
			"issues": res.Issues, "issue_count": res.IssueCount, "issues_truncated": res.Truncated()})
	}
	cmd := res.ImportCommand()
	idem := c.idem
	if idem == nil {
		// Without a key, the document is its own: importing it again replays the first import.
		idem = &accountable.Idempotency{Key: cmd.ReceiptImportKey(), Operation: opImportReceipt}
	}
	idem.RequestDigest = cmd.Digest
	out, dup, err := receiptStore.of(a.s).ImportReceipt(c.ctx, c.principal, idem, cmd)
	if err != nil {
		return out, err
	}
	out.Idempotent = dup || out.Idempotent
	c.replayed(out.Idempotent)
	return out, nil
}
