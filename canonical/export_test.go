package canonical

// IsCanonical exposes isCanonical, for text at the top level, to the external tests.
func IsCanonical(raw []byte) bool { return isCanonical(raw, 0, maxCanonDepth) }

// MaxDepth exposes maxCanonDepth to the external tests.
const MaxDepth = maxCanonDepth

// ReflectiveJSON is JSON without Appenders: every value encoded by reflection, the
// reference an Appender's own form is compared with.
func ReflectiveJSON(v any) ([]byte, error) {
	e := canonEncoder{buf: make([]byte, 0, 256), limit: maxCanonDepth, reflective: true}
	if err := e.anyValue(v); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// AppendFreeForm is the FreeForm the encoder gives Appenders, for calling one directly.
var AppendFreeForm FreeForm = appendFreeForm

// CompareUTF16Bytes exposes compareUTF16Bytes, the canonical-text check's CompareUTF16.
var CompareUTF16Bytes = compareUTF16Bytes

// RawFast exposes the one-pass canonicalisation of JSON text (ok false where it gives up)
// and RawDecoded the long way through encoding/json, for text at depth 0 within limit.
func RawFast(raw []byte, limit int) ([]byte, bool) { return rawFast(nil, raw, 0, limit) }

func RawDecoded(raw []byte, limit int) ([]byte, error) {
	e := canonEncoder{limit: limit}
	if err := e.rawDecoded(raw); err != nil {
		return nil, err
	}
	return e.buf, nil
}
