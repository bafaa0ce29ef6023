package canonical

// IsCanonical exposes isCanonical, for text at the top level, to the external tests.
func IsCanonical(raw []byte) bool { return isCanonical(raw, 0, maxCanonDepth) }

// MaxDepth exposes maxCanonDepth to the external tests.
const MaxDepth = maxCanonDepth
