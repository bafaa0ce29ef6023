package receipt

import (
	"encoding/json"
	"errors"
	"strconv"
)

// The receipt's Go type, read from the document the input stage decoded (map[string]any,
// []any, string, json.Number, bool, nil) instead of parsing its text once more: that
// second parse was a sixth of a validation. It reads as go-json-experiment/json reads the
// text into AgentWorkReceipt (receipt/schema's Decoder, the service's until now), so that
// every verdict stays the same: member names match exactly, unknown members are ignored,
// null leaves a value zero (a pointer or slice nil), [] makes an empty slice, an int64 is
// only a plain integer within range (1.0 and 1e2 are not), and a value of another JSON type
// than the field's is an error (the document then "does not have the shape of a receipt").
// TestReceiptFromDocumentIsTheDecoders (receipt/schema) holds it to that decoder.

// errReceiptShape: a value whose JSON type the field cannot take.
var errReceiptShape = errors.New("receipt: a value of another type than its field's")

// documentReader reads values of the decoded document, keeping the first error.
type documentReader struct{ err error }

func (d *documentReader) fail() { d.err = errReceiptShape }

// object returns v as an object (nil for null).
func (d *documentReader) object(v any) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		return v
	case nil:
	default:
		d.fail()
	}
	return nil
}

// array returns v as an array: nil for null, empty (not nil) for [].
func (d *documentReader) array(v any) ([]any, bool) {
	switch v := v.(type) {
	case []any:
		return v, true
	case nil:
	default:
		d.fail()
	}
	return nil, false
}

func (d *documentReader) string(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
	default:
		d.fail()
	}
	return ""
}

func (d *documentReader) optString(v any) *string {
	switch v := v.(type) {
	case string:
		return &v
	case nil:
	default:
		d.fail()
	}
	return nil
}

func (d *documentReader) strings(v any) []string {
	items, ok := d.array(v)
	if !ok {
		return nil
	}
	out := make([]string, len(items))
	for i, item := range items {
		out[i] = d.string(item)
	}
	return out
}

func (d *documentReader) float(v any) float64 {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			d.fail()
		}
		return f
	case nil:
	default:
		d.fail()
	}
	return 0
}

func (d *documentReader) optFloat(v any) *float64 {
	if v == nil {
		return nil
	}
	f := d.float(v)
	return &f
}

func (d *documentReader) optInt(v any) *int64 {
	switch v := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			d.fail()
		}
		return &i
	case nil:
	default:
		d.fail()
	}
	return nil
}

func (d *documentReader) optBool(v any) *bool {
	switch v := v.(type) {
	case bool:
		return &v
	case nil:
	default:
		d.fail()
	}
	return nil
}

// list reads an array of objects with read.
func list[T any](d *documentReader, v any, read func(map[string]any, *T)) []T {
	items, ok := d.array(v)
	if !ok {
		return nil
	}
	out := make([]T, len(items))
	for i, item := range items {
		read(d.object(item), &out[i])
	}
	return out
}

// optObject reads an object into a new T (nil for null).
func optObject[T any](d *documentReader, v any, read func(map[string]any, *T)) *T {
	if v == nil {
		return nil
	}
	t := new(T)
	read(d.object(v), t)
	return t
}

// receiptFromDocument reads the receipt's Go type from its decoded document.
func receiptFromDocument(doc map[string]any, r *AgentWorkReceipt) error {
	d := &documentReader{}
	r.SchemaVersion = d.string(doc["schema_version"])
	r.ReceiptID = d.string(doc["receipt_id"])
	if o := d.object(doc["intent"]); o != nil {
		r.Intent.Summary = d.string(o["summary"])
		r.Intent.RequestRef = optObject(d, o["request_ref"], d.ref)
	}
	d.actor(d.object(doc["actor"]), &r.Actor)
	if o := d.object(doc["authority"]); o != nil {
		a := &r.Authority
		a.Mode, a.Status = d.string(o["mode"]), d.string(o["status"])
		a.ValidFrom, a.ValidUntil = d.optString(o["valid_from"]), d.optString(o["valid_until"])
	}
	r.Actions = list(d, doc["actions"], func(o map[string]any, a *ReceiptAction) {
		a.ID, a.Type, a.Status = d.string(o["id"]), d.string(o["type"]), d.string(o["status"])
		a.StartedAt, a.CompletedAt = d.optString(o["started_at"]), d.optString(o["completed_at"])
	})
	r.Artifacts = list(d, doc["artifacts"], func(o map[string]any, a *ReceiptArtifact) {
		a.ID, a.CreatedAt = d.string(o["id"]), d.optString(o["created_at"])
	})
	r.Evidence = list(d, doc["evidence"], func(o map[string]any, e *ReceiptEvidence) {
		e.ID, e.ObservedAt = d.string(o["id"]), d.string(o["observed_at"])
	})
	if o := d.object(doc["outcome"]); o != nil {
		out := &r.Outcome
		out.Status = d.string(o["status"])
		out.Metrics = list(d, o["metrics"], func(o map[string]any, m *struct {
			EvidenceIDs []string `json:"evidence_ids"`
		}) {
			m.EvidenceIDs = d.strings(o["evidence_ids"])
		})
		out.Acceptance = optObject(d, o["acceptance"], func(o map[string]any, a *ReceiptAcceptance) {
			a.Status, a.OccurredAt, a.EvidenceIDs = d.string(o["status"]), d.optString(o["occurred_at"]), d.strings(o["evidence_ids"])
		})
	}
	if o := d.object(doc["verification"]); o != nil {
		v := &r.Verification
		v.Status = d.string(o["status"])
		v.Verifier = optObject(d, o["verifier"], d.actor)
		v.Checks = list(d, o["checks"], func(o map[string]any, c *ReceiptVerificationCheck) {
			c.ID, c.Status, c.EvidenceIDs = d.string(o["id"]), d.string(o["status"]), d.strings(o["evidence_ids"])
		})
		v.EvidenceIDs, v.VerifiedAt = d.strings(o["evidence_ids"]), d.optString(o["verified_at"])
	}
	if o := d.object(doc["cost"]); o != nil {
		c := &r.Cost
		c.Currency, c.Total = d.string(o["currency"]), d.float(o["total"])
		c.Components = list(d, o["components"], func(o map[string]any, c *ReceiptCostComponent) {
			c.Category, c.Amount = d.string(o["category"]), d.float(o["amount"])
		})
		c.Usage = list(d, o["usage"], func(o map[string]any, u *ReceiptUsage) {
			u.Name, u.Quantity, u.Unit, u.Cost = d.string(o["name"]), d.float(o["quantity"]), d.string(o["unit"]), d.optFloat(o["cost"])
		})
		c.HumanMinutes, c.Estimated = d.optFloat(o["human_minutes"]), d.optBool(o["estimated"])
	}
	if o := d.object(doc["lineage"]); o != nil {
		r.Lineage.RunRef, r.Lineage.TraceID = optObject(d, o["run_ref"], d.ref), d.optString(o["trace_id"])
	}
	r.HumanInterventions = list(d, doc["human_interventions"], func(o map[string]any, h *ReceiptHumanIntervention) {
		h.ID, h.Kind, h.OccurredAt = d.string(o["id"]), d.string(o["kind"]), d.string(o["occurred_at"])
		h.DurationMinutes, h.EvidenceIDs = d.optFloat(o["duration_minutes"]), d.strings(o["evidence_ids"])
	})
	if o := d.object(doc["timestamps"]); o != nil {
		t := &r.Timestamps
		t.StartedAt, t.CompletedAt, t.IssuedAt = d.string(o["started_at"]), d.string(o["completed_at"]), d.string(o["issued_at"])
		t.ObservedAt, t.DurationMS = d.optString(o["observed_at"]), d.optInt(o["duration_ms"])
	}
	return d.err
}

func (d *documentReader) ref(o map[string]any, r *ReceiptRef) {
	r.System, r.Type, r.ID = d.string(o["system"]), d.string(o["type"]), d.string(o["id"])
}

func (d *documentReader) actor(o map[string]any, a *ReceiptActor) {
	if o == nil {
		return
	}
	a.Type, a.ID, a.DisplayName = d.string(o["type"]), d.string(o["id"]), d.optString(o["display_name"])
	a.Runtime = optObject(d, o["runtime"], func(o map[string]any, r *ReceiptRuntime) {
		r.Name, r.Version = d.string(o["name"]), d.optString(o["version"])
	})
	a.Model = optObject(d, o["model"], func(o map[string]any, m *ReceiptModel) {
		m.Provider, m.Name, m.Version = d.string(o["provider"]), d.string(o["name"]), d.optString(o["version"])
	})
}
