package workload

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// The enumerations of the request decode a known value to its constant, without
// allocating a string for it: a diagnosis request is mostly such values (26 of the 30
// of make bench's body), and the default decoding allocated many of them (its string
// cache spares some): BenchmarkDoctorPath made 33 allocations a request, 24 with these.
// Anything else is left to the default decoding, so the result and every error are the
// same: a value that is not a string (a type error, or null) is declined
// before it is read (errors.ErrUnsupported, which go-json-experiment answers with its
// own decoding), and a string outside the enumeration is unquoted as the default
// decoding unquotes it, for Validate to refuse. TestWorkloadEnumDecoding checks both
// against the default decoding.

// UnmarshalJSONFrom decodes a time horizon.
func (v *WorkloadTimeHorizon) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadTimeHorizons)
}

// UnmarshalJSONFrom decodes a coordination.
func (v *WorkloadCoordination) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadCoordinations)
}

// UnmarshalJSONFrom decodes a system category.
func (v *WorkloadSystemCategory) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadCategories)
}

// UnmarshalJSONFrom decodes an access level.
func (v *WorkloadAccess) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadAccesses)
}

// UnmarshalJSONFrom decodes a side effect.
func (v *WorkloadSideEffect) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadSideEffects)
}

// UnmarshalJSONFrom decodes a data class.
func (v *WorkloadDataClass) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadDataClasses)
}

// UnmarshalJSONFrom decodes an action.
func (v *WorkloadAction) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadActions)
}

// UnmarshalJSONFrom decodes an approval policy.
func (v *WorkloadApprovalPolicy) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadApprovalPolicies)
}

// UnmarshalJSONFrom decodes a budget control.
func (v *WorkloadBudgetControl) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadBudgetControls)
}

// UnmarshalJSONFrom decodes an evidence level.
func (v *WorkloadEvidence) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadEvidences)
}

// UnmarshalJSONFrom decodes an acceptance.
func (v *WorkloadAcceptance) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadAcceptances)
}

// UnmarshalJSONFrom decodes a consequence.
func (v *WorkloadConsequence) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadConsequences)
}

// UnmarshalJSONFrom decodes a retention.
func (v *WorkloadRetention) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return unmarshalEnum(dec, v, workloadRetentions)
}

// unmarshalEnum decodes a JSON string into v: one of values without an allocation, any
// other string unquoted; anything but a string is declined unread.
func unmarshalEnum[T ~string](dec *jsontext.Decoder, v *T, values []T) error {
	if dec.PeekKind() != '"' {
		return errors.ErrUnsupported
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if text := raw[1 : len(raw)-1]; bytes.IndexByte(text, '\\') < 0 {
		for _, known := range values {
			if string(text) == string(known) {
				*v = known
				return nil
			}
		}
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return err
	}
	*v = T(s)
	return nil
}
