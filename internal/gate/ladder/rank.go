package ladder

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
)

// The ladder ranks a failure's own evidence above the machine's load
// figures. From strongest to weakest:
//
//  1. the test failed every rerun alone (consistent): load does not make
//     a test fail every time, so it is never re-attributed to capacity;
//  2. an oracle named a violation (a record says "violated", or the
//     failure says VIOLATED): a slow machine makes a test late, not
//     wrong, so the failure is the code's, never capacity's, and no
//     neighbour run can change that answer;
//  3. another run on this Docker host removed this run's container while
//     the test ran (interference): the environment's, named as such;
//  4. load: capacity owns a failure only when it disappears on a quiet
//     machine and its text is consistent with timing.

// Interference is one thing another run on this Docker host did to this
// run's resources (hostevents reads them from the engine's events): a
// container of this run removed by another run's sweep while its owner
// was still alive.
type Interference struct {
	At time.Time `json:"at"`
	// What says it in words: which container, whose run, what removed it.
	What string `json:"what"`
}

// violation is the violation an oracle named in the failure: in a record
// of the battery or of a rerun alone, or in the failure text itself
// ("oracle exactly-once: VIOLATED"); "" when none did.
func violation(o *Outcome, opts Options) string {
	for _, r := range o.Runs {
		if v := violatedIn(r.Records, o.Test); v != "" {
			return v
		}
	}
	if v := violatedIn(opts.Records, o.Test); v != "" {
		return v
	}
	for _, text := range []string{o.Reruns.Reason, o.Reason} {
		if strings.Contains(text, "VIOLATED") {
			return text
		}
	}
	return ""
}

// violatedIn is the first violated oracle the records of test hold.
func violatedIn(recs []faultrecord.Record, test string) string {
	for _, r := range recs {
		if r.Test != test && !strings.HasSuffix(test, "/"+r.Leg) {
			continue
		}
		for _, or := range r.Oracles {
			if or.Result == "violated" {
				return fmt.Sprintf("oracle %s: VIOLATED: %s", or.Name, or.Detail)
			}
		}
	}
	return ""
}

// timing matches failure text that is consistent with a machine too busy
// to keep time: a timeout, a deadline, a bound of time missed.
var timing = regexp.MustCompile(`(?i)(time[ds]? ?out|deadline|too slow|slower than|took|within|waited|wait(ing)? for|latency|elapsed|not in time|too long|starv|quiet machine|threads wait)`)

// timingText reports whether a failure's text is consistent with timing:
// capacity can own it only then.
func timingText(o *Outcome) bool {
	return timing.MatchString(o.Reruns.Reason) || timing.MatchString(o.Reason)
}

// quietPass reports whether the failure disappeared on a quiet machine:
// every rerun alone passed, or failed only while other work held it.
func quietPass(r Reruns) bool {
	return r.Class == Passes || r.failsOnlyWhenBusy()
}

// interferenceDuring is what other runs on this Docker host did to this
// run while the failing test ran (its battery window, with a few seconds
// either side for the engine's clock), or, when that window is not known,
// at any time of the run.
func interferenceDuring(opts Options, pkg, name string) []string {
	if len(opts.Interference) == 0 {
		return nil
	}
	t, ok := failedTest(opts, pkg, name)
	var says []string
	for _, e := range opts.Interference {
		if ok && !t.Started.IsZero() {
			from, to := t.Started.Add(-slack), t.Started.Add(t.Elapsed+slack)
			if e.At.Before(from) || e.At.After(to) {
				continue
			}
		}
		if !slices.Contains(says, e.What) {
			says = append(says, e.What)
		}
	}
	return says
}

// slack widens a test's window for events timed by the Docker engine.
const slack = 5 * time.Second

// Infrastructure owns a failure another run on the same Docker host
// caused (interference): neither the component, the test's author nor
// the machine's capacity can fix it.
const Infrastructure Owner = "infrastructure"

// interfered ends the ladder for a failure that passes alone and that
// another run on this Docker host caused while it ran.
func interfered(o *Outcome, cmd string) {
	o.Owner, o.OwnerName, o.Verdict = Infrastructure, "", Interfered
	o.Action = fmt.Sprintf("interference: another run on this Docker host acted on this run's resources while the test ran (%s)%s; it passed %d of %d reruns alone: give concurrent runs their own Docker host (or CI job), and sweep only a run whose owner is gone; %s reproduces it alone if it ever does",
		strings.Join(o.Interference, "; "), because(o), o.Reruns.Runs-o.Reruns.Failures, o.Reruns.Runs, cmd)
	for _, w := range o.Interference {
		o.Evidence = append(o.Evidence, "interference: "+w)
	}
}
