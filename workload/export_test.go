package workload

// AppendCanonicalRequest is appendCanonicalRequest, for the tests of package workload_test.
var AppendCanonicalRequest = appendCanonicalRequest
