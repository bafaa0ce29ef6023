package workload_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workload"
)

// The byte-identity net of the diagnosis: the exact answer (Diagnose encoded as the API
// encoded it, encoding/json through Fiber's c.JSON: <, > and & as \u003c...) and the
// diagnosis id of a fixed corpus, recorded in testdata/diagnosis-golden.txt.gz. Any change
// of a byte fails, of json.Marshal's and of AppendJSON's (what the API sends); a deliberate
// change of the rules re-records it with UPDATE_GOLDEN=1. Speed-ups of Diagnose, its id
// and its encoding must leave the file unchanged.

const goldenPath = "testdata/diagnosis-golden.txt.gz"

// goldenCase is one request of the corpus and its name in the golden file.
type goldenCase struct {
	name string
	req  workload.WorkloadRequest
}

// goldenCorpus is the bench's body, the fuzz corpus's bodies that decode, 400 valid
// requests and 150 broken ones (Diagnose must not change on what Validate refuses
// either), generated from a fixed seed.
func goldenCorpus(t testing.TB) []goldenCase {
	t.Helper()
	var out []goldenCase
	raw, err := os.ReadFile("testdata/release-notes-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	var bench workload.WorkloadRequest
	if err := json.Unmarshal(raw, &bench); err != nil {
		t.Fatal(err)
	}
	out = append(out, goldenCase{"release-notes-agent", bench})
	files, err := filepath.Glob("testdata/fuzz/FuzzDiagnoseWorkload/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		body := fuzzCorpusBody(t, name)
		var req workload.WorkloadRequest
		if json.Unmarshal(body, &req) != nil {
			continue
		}
		out = append(out, goldenCase{"fuzz/" + filepath.Base(name), req})
	}
	r := rand.New(rand.NewPCG(2026, 1127))
	for i := range 400 {
		out = append(out, goldenCase{"random/" + strconv.Itoa(i), randomWorkload(r)})
	}
	for i := range 150 {
		req := randomWorkload(r)
		mutateWorkload(r, &req)
		out = append(out, goldenCase{"broken/" + strconv.Itoa(i), req})
	}
	return out
}

// fuzzCorpusBody reads a "go test fuzz v1" file of one []byte value.
func fuzzCorpusBody(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	_, lit, _ := strings.Cut(string(raw), "\n")
	lit = strings.TrimSpace(lit)
	lit = strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")")
	s, err := strconv.Unquote(lit)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return []byte(s)
}

// goldenLines are the lines of the golden file: name, diagnosis id and answer, separated
// by tabs (the answer, JSON, holds no tab nor newline).
func goldenLines(t testing.TB) []byte {
	var b bytes.Buffer
	for _, c := range goldenCorpus(t) {
		d := workload.Diagnose(c.req)
		answer, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if fast := d.AppendJSON(nil); !bytes.Equal(fast, answer) { // what the API sends
			t.Fatalf("%s: AppendJSON is not json.Marshal:\n got %s\nwant %s", c.name, fast, answer)
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\n", c.name, workload.WorkloadDiagnosisID(c.req), answer)
	}
	return b.Bytes()
}

func TestDiagnosisGolden(t *testing.T) {
	checkGolden(t, goldenPath, goldenLines(t), 500)
}

// validationGoldenPath holds Validate's verdict on the corpus and on 600 more broken
// requests: the code, the message and the issues (JSON) of its error, or "ok".
const validationGoldenPath = "testdata/validation-golden.txt.gz"

func TestValidationGolden(t *testing.T) {
	cases := goldenCorpus(t)
	r := rand.New(rand.NewPCG(415, 1127))
	for i := range 600 {
		req := randomWorkload(r)
		mutateWorkload(r, &req)
		cases = append(cases, goldenCase{"broken-more/" + strconv.Itoa(i), req})
	}
	var b bytes.Buffer
	for _, c := range cases {
		err := c.req.Validate()
		if err == nil {
			fmt.Fprintf(&b, "%s\tok\n", c.name)
			continue
		}
		e, ok := err.(*accountable.Error)
		if !ok {
			t.Fatalf("%s: %T", c.name, err)
		}
		issues, err := json.Marshal(e.Details["issues"])
		if err != nil || len(e.Details) != 1 {
			t.Fatalf("%s: %v %v", c.name, err, e.Details)
		}
		fmt.Fprintf(&b, "%s\t%s\t%q\t%s\n", c.name, e.Code, e.Message, issues)
	}
	checkGolden(t, validationGoldenPath, b.Bytes(), 1000)
}

// checkGolden compares got, lines, with the gzipped golden file at path (UPDATE_GOLDEN=1
// records it instead); the corpus must have at least least lines.
func checkGolden(t *testing.T, path string, got []byte, least int) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		if _, err := w.Write(got); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d bytes (%d compressed)", len(got), z.Len())
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	want := bufio.NewScanner(zr)
	want.Buffer(nil, 1<<20)
	lines := bytes.Split(bytes.TrimSuffix(got, []byte("\n")), []byte("\n"))
	n := 0
	for ; want.Scan(); n++ {
		if n >= len(lines) {
			t.Fatalf("the golden file has more than the %d cases of the corpus", len(lines))
		}
		if !bytes.Equal(lines[n], want.Bytes()) {
			t.Fatalf("case %d differs from the golden file:\n got %s\nwant %s", n, lines[n], want.Bytes())
		}
	}
	if err := want.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(lines) {
		t.Fatalf("the golden file has %d cases, the corpus %d", n, len(lines))
	}
	if n < least {
		t.Fatalf("only %d cases", n)
	}
}
