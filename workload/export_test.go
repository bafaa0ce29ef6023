package workload

// AppendCanonicalRequest is appendCanonicalRequest, for the tests of package workload_test.
var AppendCanonicalRequest = appendCanonicalRequest

// KnownTexts are the texts of workloadKnownTexts, for the encoders' tests to write.
func KnownTexts() []string {
	out := make([]string, len(workloadKnownTexts.texts))
	for i, k := range workloadKnownTexts.texts {
		out[i] = k.text
	}
	return out
}
