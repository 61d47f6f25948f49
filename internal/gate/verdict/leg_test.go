package verdict

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestALegReadsAsEitherFileWroteIt(t *testing.T) {
	tests := []struct {
		name, in, lever string
	}{
		{"contested/<surface>.json", `{"lever":"reset","verdict":"PASS-smoke"}`, "reset"},
		{"validate.json", `{"leg":"reset","verdict":"PASS-smoke"}`, "reset"},
		{"both", `{"leg":"reset","lever":"reset","verdict":"PASS-smoke"}`, "reset"},
		{"lever wins a disagreement", `{"leg":"burst","lever":"reset","verdict":"PASS-smoke"}`, "reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l Leg
			if err := json.Unmarshal([]byte(tt.in), &l); err != nil {
				t.Fatal(err)
			}
			if l.Lever != tt.lever || l.Verdict != PassSmoke {
				t.Errorf("read %+v, want lever %s and PASS-smoke", l, tt.lever)
			}
		})
	}
}

func TestALegIsWrittenWithTheKeysBothReadersKnow(t *testing.T) {
	b, err := json.Marshal(Leg{Lever: "reset", Verdict: FailReproducible, Decision: &Decision{Test: "TestX", Owner: "test author", Verdict: "flaky alone"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"leg":"reset"`, `"lever":"reset"`, `"verdict":"FAIL-reproducible"`, `"oracles":[]`, `"runs":[]`, `"decision":{"test":"TestX"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back Leg
	if err := json.Unmarshal(b, &back); err != nil || back.Lever != "reset" || back.Decision == nil || back.Decision.Owner != "test author" {
		t.Errorf("read back %+v (%v)", back, err)
	}
}
