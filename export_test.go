package accountable

// IsCanonical exposes isCanonical to the external tests.
var IsCanonical = isCanonical
