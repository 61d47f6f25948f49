package ladder

import (
	"fmt"
	"strings"

	"github.com/contested/contested/internal/battery"
)

// FromSeen answers for a test the battery it was reported from (opts.Seen,
// the last validate run on this code) saw pass: NO FAILURE, from that
// evidence, in the time it takes to read it, with no layer brought up and
// no rerun. It reports false when that battery is not known, did not run
// the test, or saw it (a subtest of it, or its package) fail: the ladder
// must then be walked. arbitrate -rerun walks it whatever the battery saw.
func FromSeen(testID string, opts Options) (*Outcome, bool) {
	if opts.Seen == nil {
		return nil, false
	}
	pkg, name := SplitID(testID)
	var seen *battery.Test
	for _, t := range opts.Seen.Tests {
		if t.Name == name && (pkg == "" || t.Package == pkg) {
			if t.Action != "pass" {
				return nil, false
			}
			seen = &t
		}
	}
	if seen == nil || failedIn(opts.Seen, opts, seen.Package, name) {
		return nil, false
	}
	o := &Outcome{Test: name, Package: seen.Package, Verdict: NoFailure}
	run := "the last validate run"
	if opts.SeenRunID != "" {
		run += " (run " + opts.SeenRunID + ")"
	}
	o.Action = fmt.Sprintf("nothing to arbitrate: %s saw %s pass on this code, in %s; to rerun it anyway: go tool mage arbitrate %s -rerun",
		run, name, seen.Elapsed.Round(1e6), quoteArg(testID))
	o.History = fromHistory(opts.History, seen.Package, name, opts.SeenRunID, false)
	if h := o.History; h != nil && h.Failures > 0 {
		o.Action += fmt.Sprintf("; for context, the flake history: it %s", h.Say())
	}
	return o, true
}

// quoteArg quotes a test id for a shell when it needs it.
func quoteArg(s string) string {
	if strings.ContainsAny(s, " '\"$`\\*?[]") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}
