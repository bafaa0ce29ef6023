package discovery

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// handoffStagesOf reads what json.Unmarshal into payload.HandoffProposed reads, on the
// payloads the service writes (json.Marshal's, and jsonb's text of them) with varied
// members, and on objects it does not scan itself (names in other cases, repeated, of
// other types, escaped), which it leaves to json.Unmarshal.
func TestHandoffStagesOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	texts := []string{"", "intake", "case-1", "Triage & fix <now>", "étape", "a\"quoted\"\\key", "line\nbreak\ttab", "\u2028sep",
		"emoji 🚀", strings.Repeat("x", 300), "\x7f", "null", "bad \xff utf8"}
	pick := func() string { return texts[rng.IntN(len(texts))] }
	var payloads []string
	for i := range 400 {
		at := accountable.Time{Time: time.Date(2026, time.Month(1+i%12), 1+i%28, i%24, i%60, i%60, rng.IntN(1e9), time.FixedZone("z", (i%5-2)*3600))}
		h := accountable.Handoff{SchemaVersion: "1.0.0", ID: fmt.Sprintf("0190c0de-0006-7000-8000-%012x", i), HandoffKey: pick(),
			FromStageKey: pick(), ToStageKey: pick(), Title: pick(), Summary: pick(), Priority: accountable.HandoffNormal,
			Status: "proposed", AggregateVersion: int64(i), CreatedAt: at, UpdatedAt: at,
			ProofRequirements: []accountable.ProofRequirement{}}
		if i%3 == 0 {
			h.Result = accountable.Object(`{"handoffKey":"not this one","nested":[{"createdAt":1}]}`)
		}
		raw, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, string(raw), jsonbText(raw))
	}
	payloads = append(payloads,
		`{}`, ` { } `, `null`, `[]`, `"x"`, `{"handoffKey":"k"}`, `{"handoffKey":null,"fromStageKey":"a"}`,
		`{"handoffKey":"k","fromStageKey":"a","toStageKey":"b","createdAt":null}`,
		`{"handoffKey":"k","createdAt":"2026-11-27T08:00:00Z"}`, `{"handoffKey":"k","createdAt":"yesterday"}`,
		`{"handoffKey":"k","createdAt":12}`, `{"handoffKey":12}`, `{"handoffKey":["k"]}`, `{"handoffKey":{"a":"b"}}`,
		`{"handoffKey":true}`, `{"HandoffKey":"k"}`, `{"handoffkey":"k","handoffKey":"j"}`, `{"handoffKey":"k","handoffKey":"j"}`,
		`{"handoffKey":"j","HANDOFFKEY":"k"}`, `{"handoff\u004bey":"k"}`, `{"handoffKey":"k\u0041","toStageKey":"\ud83d\ude80"}`,
		`{"handoffKey":"k","toStageKey":"\ud83d"}`, `{"fromStageKey":"a","handoffKey":"k","x":{"y":[1,2,{"z":"}"}]},"toStageKey":"b"}`,
		"{\"handoffKey\":\"k\",\n\t\"fromStageKey\" : \"a\" ,\r\n\"toStageKey\":\"b\"}", `{"handoffKey":"k","n":-1.5e3,"t":true,"f":false,"z":null}`,
		`{"handoffKey":"k","ſtatus":"x"}`, `{"handoﬀKey":"k"}`, `{"handoffKey":"\u0000"}`)
	for _, p := range payloads {
		got, ok := handoffStagesOf([]byte(p))
		var want payload.HandoffProposed
		err := json.Unmarshal([]byte(p), &want)
		wantOK := err == nil && want.HandoffKey != ""
		if ok != wantOK || ok && (got.key != want.HandoffKey || got.from != want.FromStageKey || got.to != want.ToStageKey ||
			!got.at.Equal(want.CreatedAt.Time) || got.at.Location().String() != want.CreatedAt.Location().String() ||
			got.at != want.CreatedAt.Time) {
			t.Errorf("%s:\n got %+v %v\nwant %+v %v (%v)", p, got, ok, want, wantOK, err)
		}
	}
	// The service's own payloads are read by the scan, not json.Unmarshal.
	for _, p := range payloads[:800] {
		if _, _, sure := scanHandoffStages([]byte(p)); !sure && !strings.Contains(p, `\`) && !strings.Contains(p, "\xff") {
			t.Errorf("left to json.Unmarshal: %s", p)
		}
	}
}

// jsonbText is raw as PostgreSQL's jsonb::text writes it: members ordered by the length of
// their names, then their bytes; ", " and ": " between them.
func jsonbText(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		panic(err)
	}
	var write func(buf []byte, v any) []byte
	write = func(buf []byte, v any) []byte {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			for i := 1; i < len(keys); i++ { // insertion sort: by length, then bytes
				for j := i; j > 0 && (len(keys[j]) < len(keys[j-1]) || len(keys[j]) == len(keys[j-1]) && keys[j] < keys[j-1]); j-- {
					keys[j], keys[j-1] = keys[j-1], keys[j]
				}
			}
			buf = append(buf, '{')
			for i, k := range keys {
				if i > 0 {
					buf = append(buf, ", "...)
				}
				kb, _ := json.Marshal(k)
				buf = append(append(buf, kb...), ": "...)
				buf = write(buf, v[k])
			}
			return append(buf, '}')
		case []any:
			buf = append(buf, '[')
			for i, e := range v {
				if i > 0 {
					buf = append(buf, ", "...)
				}
				buf = write(buf, e)
			}
			return append(buf, ']')
		default:
			b, _ := json.Marshal(v)
			return append(buf, b...)
		}
	}
	return string(write(nil, v))
}
