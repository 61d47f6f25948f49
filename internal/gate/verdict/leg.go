package verdict

import (
	"encoding/json"

	"github.com/contested/contested/faultrecord"
)

// Leg is one leg of a surface's contract: its verdict over all seeds and
// the evidence it rests on. It is the one per-leg value of the module:
// contested/<surface>.json, validate.json, the terminal, JUnit, the step
// summary, the HTML report and the issue body all read it, so a figure
// added here reaches every writer that prints it without a copy between.
type Leg struct {
	Lever   string  `json:"lever"`
	Verdict Verdict `json:"verdict"`
	// Reason is why the leg got its verdict, in words.
	Reason string `json:"reason"`
	Runs   []Run  `json:"runs"`
	Armed  int    `json:"armed"`
	Fired  int    `json:"fired"` // occurrences across seeds
	Thin   bool   `json:"thin_coverage"`
	// Schedules counts the distinct schedules the seeds ran the leg by (by
	// the digests their records carry; a seed that recorded none counts).
	Schedules int `json:"schedules"`
	// Levels are the levels the registry runs the leg at, when its
	// surface restricts it (nil: every level).
	Levels   []int                   `json:"levels,omitempty"`
	Tests    []string                `json:"tests,omitempty"` // the tests that ran it
	Oracles  []faultrecord.OracleRun `json:"oracles"`
	Injector string                  `json:"injector,omitempty"` // evidence from one record
	Victim   string                  `json:"victim,omitempty"`
	Replay   string                  `json:"replay,omitempty"` // of the first failing or unproven seed
	// FailedRun is the seed of the first failing or unproven run.
	FailedRun int64 `json:"failed_seed,omitempty"`
	// Missing are the capabilities the leg could not run without, when it
	// did not run for lack of them (capability.Names).
	Missing []string `json:"missing_capabilities,omitempty"`
	// Decision is the arbitration ladder's decision on the leg's failing
	// test, when validate walked it: the one owner every writer shows.
	Decision *Decision `json:"decision,omitempty"`
}

// legFields is Leg without its JSON methods.
type legFields Leg

// legJSON is a leg as files hold it: every field, and the lever once more
// as "leg", the name validate.json has always given it.
type legJSON struct {
	Leg string `json:"leg"`
	legFields
}

// MarshalJSON writes every field and the lever as both "lever" and
// "leg", so that contested/<surface>.json and validate.json keep the keys
// their readers know. Nil lists are written as empty ones.
func (l Leg) MarshalJSON() ([]byte, error) {
	if l.Oracles == nil {
		l.Oracles = []faultrecord.OracleRun{}
	}
	if l.Runs == nil {
		l.Runs = []Run{}
	}
	return json.Marshal(legJSON{Leg: l.Lever, legFields: legFields(l)})
}

// UnmarshalJSON reads a leg written with either key for its lever.
func (l *Leg) UnmarshalJSON(b []byte) error {
	var v legJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*l = Leg(v.legFields)
	if l.Lever == "" {
		l.Lever = v.Leg
	}
	return nil
}

// Decision is who owns one failure and why, as the arbitration ladder
// decided it. Every writer (terminal, validate.json, JUnit, step summary,
// HTML, issue body) renders this one value, so a surface's leg and the
// arbitration of its failing test cannot name two owners.
type Decision struct {
	Test string `json:"test"`
	// Owner is the owner in words: "component (stock-team)", "test
	// author", "capacity", "infrastructure", "fault layer", or "none".
	Owner   string `json:"owner"`
	Verdict string `json:"verdict"`
	Action  string `json:"action,omitempty"`
}

// Say is the decision in a few words: "owner component (stock-team):
// FAIL-reproducible".
func (d Decision) Say() string { return "owner " + d.Owner + ": " + d.Verdict }

// Landing says what the leg's records show of its fault landing, one line
// per side: "injector: …" and "victim: …" when recorded, and, for a side
// that was not, that it is missing and why that matters, so no reader
// sees an empty "victim: " and takes it for evidence.
func (l Leg) Landing() []string {
	switch {
	case l.Injector == "" && l.Victim == "":
		return []string{"landing evidence: missing: no record of the leg holds what the injector or the component saw, so nothing ties the failure to its fault landing"}
	case l.Injector == "":
		return []string{"injector: missing: no record holds what the armer saw, so nothing shows the fault was in place", "victim: " + l.Victim}
	case l.Victim == "":
		return []string{"injector: " + l.Injector, "victim: missing: no record holds what the component saw, so nothing shows the fault reached it"}
	}
	return []string{"injector: " + l.Injector, "victim: " + l.Victim}
}

// FailedBeforeArming is the failure of the leg's first run whose test
// failed before its fault was armed, when that is what decided its
// verdict: the leg's evidence is about its setup, and no writer may read
// it as falsifying the claim under fault.
func (l Leg) FailedBeforeArming() (string, bool) {
	if l.Verdict != InconclusiveFaultNotProven {
		return "", false
	}
	for _, r := range l.Runs {
		if r.FailedBeforeArming != "" {
			return r.FailedBeforeArming, true
		}
	}
	return "", false
}
