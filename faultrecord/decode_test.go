package faultrecord

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// knownKeys are the keys decodeRecord matches exactly, where encoding/json also folds case.
var knownKeys = map[string][]string{
	"": {"schema", "run_id", "test", "package", "surface", "class", "leg", "seed", "replay",
		"armed", "armed_at", "fired", "fired_at", "evidence", "oracles", "test_failed", "schedule"},
	"evidence": {"injector", "victim"},
}

// caseVariantKey reports whether data has a key that encoding/json would fold onto a schema key
// that it does not spell exactly: the one place the two decoders may legitimately differ.
func caseVariantKey(data []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return false
	}
	variant := func(m map[string]json.RawMessage, known []string) bool {
		for k := range m {
			for _, want := range known {
				if k != want && strings.EqualFold(k, want) {
					return true
				}
			}
		}
		return false
	}
	if variant(top, knownKeys[""]) {
		return true
	}
	for k, v := range top {
		if strings.EqualFold(k, "evidence") {
			var ev map[string]json.RawMessage
			if json.Unmarshal(v, &ev) == nil && variant(ev, knownKeys["evidence"]) {
				return true
			}
		}
	}
	return false
}

// checkAgainstEncodingJSON is the differential property: whatever decodeRecord accepts,
// encoding/json accepts with the same value; whatever encoding/json accepts, decodeRecord
// accepts too unless a key differs from the schema's spelling only by case.
func checkAgainstEncodingJSON(t *testing.T, data []byte) {
	t.Helper()
	if caseVariantKey(data) {
		// encoding/json folds "Surface" onto surface, decodeRecord does not: only check that
		// decodeRecord does not accept malformed JSON.
		var mine Record
		if decodeRecord(data, &mine) == nil && !json.Valid(data) {
			t.Fatalf("decodeRecord accepted invalid JSON:\n%q", data)
		}
		return
	}
	var mine, ref Record
	errMine := decodeRecord(data, &mine)
	errRef := json.Unmarshal(data, &ref)
	switch {
	case errMine == nil && errRef != nil:
		t.Fatalf("decodeRecord accepted what encoding/json rejects (%v):\n%q", errRef, data)
	case errMine == nil:
		if diff := cmp.Diff(ref, mine, cmpopts.IgnoreUnexported(Record{}, Evidence{})); diff != "" {
			t.Fatalf("decoders disagree on %q (-encoding/json +decodeRecord):\n%s", data, diff)
		}
	case errRef == nil:
		t.Fatalf("decodeRecord rejected (%v) what encoding/json accepts:\n%q", errMine, data)
	}
}

// decodeCorpus is the seed corpus: the design's example, every testdata record and inputs
// aimed at each branch of the decoder.
func decodeCorpus(t testing.TB) [][]byte {
	corpus := [][]byte{[]byte(validJSON)}
	files, _ := filepath.Glob(filepath.Join("testdata", "records", "*", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		corpus = append(corpus, data)
	}
	for _, s := range []string{
		``, ` `, `null`, `nul`, `[]`, `"x"`, `{}`, `{ }`, `{"a":1,}`, `{"a" 1}`, `{"a":1 "b":2}`, `{1:2}`,
		`{"schema":"contested/faultrecord@1"}x`, `{"schema":"contested/faultrecord@1"} `,
		`{"seed":1.0}`, `{"seed":1e3}`, `{"seed":-0}`, `{"seed":01}`, `{"seed":9223372036854775808}`, `{"seed":-9223372036854775808}`,
		`{"seed":"42"}`, `{"seed":null}`, `{"seed":-}`, `{"seed":1.}`, `{"seed":1e}`, `{"seed":1e+}`,
		`{"armed":true,"armed":false}`, `{"armed":tru}`, `{"armed":"true"}`, `{"armed":null}`, `{"armed":1}`,
		`{"surface":"a","surface":null}`, `{"surface":5}`, `{"surface":"\u0041\n\"\\\/\b\f\r\t"}`, `{"surface":"\ud83d\ude00"}`,
		`{"surface":"\ud83d"}`, `{"surface":"\x"}`, `{"surface":"\u12"}`, `{"surface":"a` + "\x01" + `"}`, `{"surface":"` + "\xff\xfe" + `"}`,
		`{"\u0073urface":"escaped key"}`, `{"Surface":"folded key"}`, `{"SURFACE":"x","surface":"y"}`,
		`{"armed_at":"2026-11-29T10:15:01.123456Z"}`, `{"armed_at":"2026-11-29 10:15:01Z"}`, `{"armed_at":"2026\u002d11-29T10:15:01Z"}`,
		`{"armed_at":null}`, `{"armed_at":5}`, `{"fired_at":"2026-11-29T10:15:01+01:00"}`, `{"fired_at":"2026-11-29T24:00:00Z"}`,
		`{"evidence":{"injector":"i","victim":"v","extra":[1,{"a":[]}]}}`, `{"evidence":null}`, `{"evidence":"x"}`,
		`{"evidence":{"injector":"i"},"evidence":{"victim":"v"}}`, `{"evidence":{"Victim":"v"}}`,
		`{"x":[1,2,[3,{"y":null}]],"z":{"a":{"b":{}}},"w":-1.5e-3,"v":true}`, `{"x":[1,]}`, `{"x":[}`, `{"x":{"a"}}`,
		`{"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
		"\t{\r\n\"leg\" :\n\"reset\" }\n",
		`{"oracles":[{"name":"exactly-once","ops_produced":3,"ops_checked":3,"result":"held"}]}`, `{"oracles":null}`,
		`{"test_failed":true}`, `{"test_failed":null}`, `{"test_failed":"yes"}`,
		`{"oracles":[1]}`, `{"oracles":{}}`, `{"oracles":[{"name":"a"}],"oracles":[]}`, `{"oracles":[{"ops_checked":"x"}]}`,
		`{"schedule":{"digest":"0123456789abcdef","summary":"reset level 1: #1 @93 downstream","window":1,"timing":"schedule"}}`,
		`{"schedule":null}`, `{"schedule":{}}`, `{"schedule":[]}`, `{"schedule":{"window":"1"}}`, `{"schedule":{"digest":1}}`,
		`{"schedule":{"digest":"a"},"schedule":{"summary":"b"}}`, `{"Schedule":{"digest":"a"}}`, `{"schedule":{"extra":[1]}}`,
	} {
		corpus = append(corpus, []byte(s))
	}
	return corpus
}

func TestDecodeRecordMatchesEncodingJSON(t *testing.T) {
	for _, data := range decodeCorpus(t) {
		checkAgainstEncodingJSON(t, data)
	}
	// Every truncation and a set of single-byte mutations of the design example: the shapes a
	// killed writer or a corrupted disk would leave.
	src := []byte(validJSON)
	for i := range src {
		checkAgainstEncodingJSON(t, src[:i])
		for _, c := range []byte{'"', '\\', '{', '}', '[', ',', ':', ' ', '0', 'x', 'S', 0x01, 0xff} {
			m := []byte(validJSON)
			m[i] = c
			checkAgainstEncodingJSON(t, m)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, data := range decodeCorpus(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkAgainstEncodingJSON(t, data) })
}
