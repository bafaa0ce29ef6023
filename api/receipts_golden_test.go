package api

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/receipt"
	"github.com/accountablework/accountable/receipt/receipttest"
	receiptschema "github.com/accountablework/accountable/receipt/schema"
)

// The byte-identity net of receipt validation: the verdict of POST
// /agent-work-receipts/validate, as the handler makes it and the server encodes it
// (json.Marshal, the server's JSONEncoder), with its status, for every fixture and
// conformance vector of the format, the fuzz seed corpora of the receipt packages and
// several hundred deterministic mutations of the valid fixtures; for a valid receipt also
// the digest of its canonical form and of the receipt.imported payload an import would
// write. Any change to validation that moves one byte of one verdict fails here; a change
// meant to do so regenerates the file with UPDATE_GOLDEN=1 and shows the diff.
const receiptVerdictsGolden = "../receipt/testdata/validate-verdicts.golden"

// receiptGoldenCase is one body validated under one set of signer keys.
type receiptGoldenCase struct {
	name string
	raw  []byte
	keys string // none, good (the signature vector's key), wrong (its wrong key)
}

func TestReceiptVerdictsGolden(t *testing.T) {
	cases := receiptGoldenCases(t)
	pub, wrong := receiptVectorKeys(t)
	schema, err := receiptschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	areas := map[string]*receiptArea{}
	for name, keys := range map[string]receipt.ReceiptSignerKeys{
		"none": nil, "good": {"rfc8032-test-key-1": pub}, "wrong": {"rfc8032-test-key-1": wrong},
	} {
		areas[name] = &receiptArea{validator: receipt.ReceiptValidator{Schema: schema, MaxBytes: 1 << 20, Keys: keys}}
	}
	var got bytes.Buffer
	valid := 0
	for _, tc := range cases {
		c := &call{doc: tc.raw}
		if c.doc == nil {
			c.doc = []byte{}
		}
		out, err := areas[tc.keys].validate(c, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		status := c.status
		if status == 0 {
			status = 200
		}
		verdict, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(tc.raw)
		extra := "-"
		if out.Valid {
			valid++
			res := areas[tc.keys].validator.Validate(tc.raw)
			payload, err := canonical.JSON(res.ImportCommand().Imported("00000000-0000-4000-8000-000000000000"))
			if err != nil {
				t.Fatalf("%s: the ledger payload: %v", tc.name, err)
			}
			extra = res.Digest + " " + canonical.Digest(payload)
		}
		fmt.Fprintf(&got, "%s\t%s\t%s\t%d\t%s\t%s\n", tc.name, tc.keys, hex.EncodeToString(sum[:8]), status, extra, verdict)
	}
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(receiptVerdictsGolden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d verdicts (%d valid) to %s", len(cases), valid, receiptVerdictsGolden)
		return
	}
	want, err := os.ReadFile(receiptVerdictsGolden)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if bytes.Equal(want, got.Bytes()) {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")
	bad := 0
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			if bad++; bad <= 5 {
				t.Errorf("line %d:\nwant %s\ngot  %s", i+1, w, g)
			}
		}
	}
	t.Fatalf("%d of %d verdict lines differ from %s", bad, len(gl), receiptVerdictsGolden)
}

// receiptTamperVector is a conformance vector's fixture and the changes made to it.
type receiptTamperVector struct {
	Fixture string `json:"fixture"`
	Tamper  []struct {
		Name    string          `json:"name"`
		Pointer string          `json:"json_pointer"`
		Value   json.RawMessage `json:"value"`
	} `json:"tamper_vectors"`
}

func receiptGoldenFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "agent-work-receipt", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var receiptGoldenFixtures = []string{"claude-code.json", "codex.json", "openclaw.json", "invalid-missing-authority.json", "invalid-unresolved-evidence.json"}

// receiptVectorKeys are the signature vector's public key and its wrong key.
func receiptVectorKeys(t *testing.T) (pub, wrong ed25519.PublicKey) {
	var vs struct {
		SignatureVector struct {
			PublicKey      struct{ Value string } `json:"public_key"`
			WrongPublicKey struct{ Value string } `json:"wrong_public_key"`
		} `json:"signature_vector"`
	}
	if err := json.Unmarshal(receiptGoldenFile(t, "conformance/agent-work-receipt-integrity-vectors.v0.1.json"), &vs); err != nil {
		t.Fatal(err)
	}
	p, err1 := base64.RawURLEncoding.DecodeString(vs.SignatureVector.PublicKey.Value)
	w, err2 := base64.RawURLEncoding.DecodeString(vs.SignatureVector.WrongPublicKey.Value)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return p, w
}

// receiptGoldenCases lists the cases, in a fixed order.
func receiptGoldenCases(t *testing.T) []receiptGoldenCase {
	var cases []receiptGoldenCase
	add := func(name string, raw []byte, keys ...string) {
		if len(keys) == 0 {
			keys = []string{"none", "good"}
		}
		for _, k := range keys {
			cases = append(cases, receiptGoldenCase{name: name, raw: raw, keys: k})
		}
	}
	fixtures := map[string][]byte{}
	for _, name := range receiptGoldenFixtures {
		fixtures[name] = receiptGoldenFile(t, "fixtures/"+name)
		add("fixture/"+name, fixtures[name], "none", "good", "wrong")
	}

	// The conformance vectors: each JSON value of them as a body, the tampered fixtures.
	var vs struct {
		Canon []struct {
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"canonicalization_vectors"`
		Numbers []struct {
			IEEE754 string          `json:"ieee754"`
			Input   json.RawMessage `json:"input"`
		} `json:"number_serialization_vectors"`
		Equivalence []struct {
			Name  string          `json:"name"`
			Left  json.RawMessage `json:"left"`
			Right json.RawMessage `json:"right"`
		} `json:"canonical_equivalence_vectors"`
		Difference []struct {
			Name  string          `json:"name"`
			Left  json.RawMessage `json:"left"`
			Right json.RawMessage `json:"right"`
		} `json:"canonical_difference_vectors"`
		RawNegative []struct {
			Name    string `json:"name"`
			RawJSON string `json:"raw_json"`
		} `json:"raw_json_negative_vectors"`
		ReceiptVector   receiptTamperVector `json:"receipt_vector"`
		SignatureVector receiptTamperVector `json:"signature_vector"`
	}
	if err := json.Unmarshal(receiptGoldenFile(t, "conformance/agent-work-receipt-integrity-vectors.v0.1.json"), &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Canon {
		add("vector/canon/"+v.Name, v.Input)
	}
	for _, v := range vs.Numbers {
		add("vector/number/"+v.IEEE754, v.Input)
		add("vector/number-in-receipt/"+v.IEEE754, receiptGoldenSet(t, fixtures["codex.json"], "/cost/total", v.Input))
	}
	for _, v := range vs.Equivalence {
		add("vector/equivalence/"+v.Name+"/left", v.Left)
		add("vector/equivalence/"+v.Name+"/right", v.Right)
	}
	for _, v := range vs.Difference {
		add("vector/difference/"+v.Name+"/left", v.Left)
		add("vector/difference/"+v.Name+"/right", v.Right)
	}
	for _, v := range vs.RawNegative {
		add("vector/raw/"+v.Name, []byte(v.RawJSON))
	}
	tamper := func(kind, fixture string, name, pointer string, value json.RawMessage) {
		add("vector/"+kind+"/"+name, receiptGoldenSet(t, fixtures[strings.TrimPrefix(fixture, "../fixtures/")], pointer, value), "none", "good", "wrong")
	}
	for _, v := range vs.ReceiptVector.Tamper {
		tamper("tamper", vs.ReceiptVector.Fixture, v.Name, v.Pointer, v.Value)
	}
	for _, v := range vs.SignatureVector.Tamper {
		tamper("signature", vs.SignatureVector.Fixture, v.Name, v.Pointer, v.Value)
	}

	// The fuzz seed corpora of the receipt packages.
	for _, dir := range []string{"../receipt/testdata/fuzz/FuzzDecodeReceiptJSON", "../receipt/schema/testdata/fuzz/FuzzValidateReceipt"} {
		entries, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			add("fuzz/"+filepath.Base(dir)+"/"+e.Name(), receiptFuzzCorpusBytes(t, b))
		}
	}

	// Edges of the input stage.
	big := append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("a"), 1<<20)...), `"}`...)
	for _, e := range []struct {
		name string
		raw  []byte
	}{
		{"empty", []byte{}}, {"space", []byte(" \n")}, {"null", []byte("null")}, {"two", []byte("{} {}")}, {"oversize", big},
		{"bom", append([]byte("\xef\xbb\xbf"), fixtures["codex.json"]...)}, {"trailing-comma", []byte(`{"a":1,}`)},
	} {
		add("edge/"+e.name, e.raw)
	}

	// Mutations of the valid fixtures, from a fixed seed.
	rng := rand.New(rand.NewPCG(20261127, 1))
	for _, name := range []string{"claude-code.json", "codex.json", "openclaw.json"} {
		for i := range 150 {
			raw, what := receiptMutation(t, rng, fixtures[name])
			add(fmt.Sprintf("mutation/%s/%03d/%s", strings.TrimSuffix(name, ".json"), i, what), raw, "good")
		}
	}
	return cases
}

// receiptFuzzCorpusBytes reads the one []byte of a Go fuzz corpus file.
func receiptFuzzCorpusBytes(t *testing.T, file []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(file)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") {
		t.Fatalf("fuzz corpus file %q", file)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s)
}

// receiptGoldenSet replaces the value at pointer (of objects and arrays) in the document.
func receiptGoldenSet(t *testing.T, raw []byte, pointer string, value json.RawMessage) []byte {
	doc := receiptGoldenDecode(t, raw)
	var v any
	if err := receiptGoldenUnmarshal(value, &v); err != nil {
		t.Fatal(err)
	}
	doc = receipttest.Put(doc, strings.Split(pointer, "/")[1:], v, false)
	return receiptGoldenEncode(t, doc)
}

func receiptGoldenUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

func receiptGoldenDecode(t *testing.T, raw []byte) any {
	var v any
	if err := receiptGoldenUnmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// receiptGoldenEncode encodes a document (members in sorted order, no HTML escaping).
func receiptGoldenEncode(t *testing.T, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Values the mutations put in.
var (
	receiptOddNumbers = []string{"-0", "0", "1e400", "-1e400", "1e-400", "0.1e1", "1E2", "123456789012345678901234567890", "-1",
		"1.5", "9007199254740993", "2.5e-3", "1e+30", "-0.0", "100000000000000000000000", "4.9e-324", "0.30000000000000004"}
	receiptOddStrings = []string{"", "x", "not-a-date", "2026-13-01T00:00:00Z", "2026-02-30T10:00:00Z", "2026-11-24T10:00:00+25:00",
		"1990-12-31T23:59:60Z", "2026-11-24t10:00:00z", "2026-11-24T10:00:00.123456789+01:00", "2026-11-24", "http://[::1", "https://example.com/a b",
		"../relative/ref", "#frag", "%zz", "unverified", "passed", "failed", "completed", "planned", "none", "granted", "sha-256", "sha256",
		"hex", "base64", "base64url", "ed25519", "agent-work-receipt/v0.1", "agent-work-receipt/v0.2", "ev-1", "é", "e\u0301", "\u2028",
		"<script>&amp;</script>", "\U0001F600", strings.Repeat("x", 300), strings.Repeat("y", 5000), "00000000-0000-0000-0000-000000000000",
		"token", "tokens", "USD", "usd", "EURO"}
)

// receiptMutation makes one mutated document of a fixture: one to three changes.
func receiptMutation(t *testing.T, rng *rand.Rand, fixture []byte) ([]byte, string) {
	doc := receiptGoldenDecode(t, fixture)
	var what []string
	for range 1 + rng.IntN(3) {
		paths := receipttest.Paths(doc)
		path := paths[1+rng.IntN(len(paths)-1)]
		// of the same kind as the current value, where one is wanted: an odd string where a
		// string is, an odd number where a number is
		ofKind := func(want func(any) bool) []string {
			var these [][]string
			for _, p := range paths[1:] {
				if want(receipttest.Get(doc, p)) {
					these = append(these, p)
				}
			}
			if len(these) == 0 {
				return path
			}
			return these[rng.IntN(len(these))]
		}
		isString := func(v any) bool { _, ok := v.(string); return ok }
		isNumber := func(v any) bool { _, ok := v.(json.Number); return ok }
		isArray := func(v any) bool { a, ok := v.([]any); return ok && len(a) > 0 }
		op := rng.IntN(13)
		switch op {
		case 2, 6, 11:
			path = ofKind(isString)
		case 3:
			path = ofKind(isNumber)
		case 12:
			path = ofKind(isArray)
		}
		at := "/" + strings.Join(path, "/")
		switch op {
		case 0: // drop a member or an item
			doc = receipttest.Put(doc, path, nil, true)
			what = append(what, "drop"+at)
		case 1: // a value of another type
			values := []any{json.Number("42"), "str", true, false, nil, []any{}, map[string]any{}, []any{"a", json.Number("1")}}
			doc = receipttest.Put(doc, path, values[rng.IntN(len(values))], false)
			what = append(what, "type"+at)
		case 2: // an odd string
			doc = receipttest.Put(doc, path, receiptOddStrings[rng.IntN(len(receiptOddStrings))], false)
			what = append(what, "string"+at)
		case 3: // an odd number
			doc = receipttest.Put(doc, path, json.Number(receiptOddNumbers[rng.IntN(len(receiptOddNumbers))]), false)
			what = append(what, "number"+at)
		case 4: // an extra member in the nearest object
			for len(path) > 0 {
				if _, ok := receipttest.Get(doc, path).(map[string]any); ok {
					break
				}
				path = path[:len(path)-1]
			}
			obj, _ := receipttest.Get(doc, path).(map[string]any)
			obj[[]string{"extra", "x-ext", "zzz", "a/b~c", "Receipt_ID"}[rng.IntN(5)]] = json.Number("1")
			what = append(what, "extra/"+strings.Join(path, "/"))
		case 5: // nesting
			depth := []int{3, 62, 63, 64, 65, 100}[rng.IntN(6)]
			var v any = "deep"
			for i := range depth {
				if i%2 == 0 {
					v = []any{v}
				} else {
					v = map[string]any{"n": v}
				}
			}
			doc = receipttest.Put(doc, path, v, false)
			what = append(what, fmt.Sprintf("nest%d%s", depth, at))
		case 6, 11: // another string of the document (repeated ids, cited ids, times out of order, enum values)
			other := ofKind(isString)
			value := receiptGoldenDecode(t, receiptGoldenEncode(t, receipttest.Get(doc, other))) // a copy: no cycles
			doc = receipttest.Put(doc, path, value, false)
			what = append(what, "copy"+at)
		case 12: // an item of an array repeated (repeated ids)
			items := receipttest.Get(doc, path).([]any)
			item := receiptGoldenDecode(t, receiptGoldenEncode(t, items[rng.IntN(len(items))]))
			doc = receipttest.Put(doc, path, append(items, item), false)
			what = append(what, "repeat"+at)
		case 7: // a long array of wrong items (more issues than are listed)
			doc = receipttest.Put(doc, path, slices.Repeat([]any{json.Number("1")}, 40+rng.IntN(200)), false)
			what = append(what, "many"+at)
		default: // text edits, done last: the document is text from here on
			raw := receiptGoldenEncode(t, doc)
			what = append(what, receiptTextMutation(rng, &raw, op))
			return raw, strings.Join(what, ",")
		}
	}
	return receiptGoldenEncode(t, doc), strings.Join(what, ",")
}

// receiptTextMutation edits the JSON text: duplicate names, bad Unicode, broken syntax.
func receiptTextMutation(rng *rand.Rand, raw *[]byte, op int) string {
	b := *raw
	switch op {
	case 8: // a member named twice, the second time maybe with an escape
		var opens []int
		for i := 0; i+1 < len(b); i++ {
			if b[i] == '{' && b[i+1] == '"' {
				opens = append(opens, i)
			}
		}
		i := opens[rng.IntN(len(opens))]
		end := bytes.IndexByte(b[i+2:], '"') + i + 2
		name := string(b[i+2 : end])
		repeat := name
		if rng.IntN(2) == 0 && name != "" {
			repeat = fmt.Sprintf(`\u%04x`, name[0]) + name[1:]
		}
		*raw = slices.Concat(b[:end+1], []byte(`:null,"`+repeat+`"`), b[end+1:])
		return fmt.Sprintf("duplicate@%d", i)
	case 9: // bad Unicode in a string
		bad := []string{"\xff", "\xc3", "\xed\xa0\x80", `\u0000`, `\ud800`, `\udc00x`, `\ud83d\ude00`, `\u00e9`, "\x01", `\x`}[rng.IntN(10)]
		var quotes []int
		for i, c := range b {
			if c == '"' {
				quotes = append(quotes, i)
			}
		}
		i := quotes[rng.IntN(len(quotes))] + 1
		*raw = slices.Concat(b[:i], []byte(bad), b[i:])
		return fmt.Sprintf("unicode%q@%d", bad, i)
	default: // cut short, or a stray byte
		i := rng.IntN(len(b))
		if rng.IntN(2) == 0 {
			*raw = b[:i]
			return fmt.Sprintf("cut@%d", i)
		}
		c := []byte(",:]}[{ 0-\"")[rng.IntN(10)]
		*raw = slices.Concat(b[:i], []byte{c}, b[i:])
		return fmt.Sprintf("stray%q@%d", c, i)
	}
}
