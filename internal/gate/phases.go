package gate

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/seed"
)

func buildReport(dir string, opts Options, st stampState, sc scanResult, inv inventoryResult) *Report {
	rep := &Report{
		Schema:               ReportSchema,
		Mode:                 opts.Mode,
		Dir:                  dir,
		RunID:                st.runID,
		StampPresent:         st.present,
		RecordsRead:          sc.read,
		RecordsUnreadable:    len(sc.unreadable),
		Unreadable:           sc.unreadable,
		Stale:                sc.stale,
		Armed:                sc.armed,
		Fired:                sc.fired,
		Unfired:              sc.unfired,
		ByClass:              sc.byClass,
		RecordingClasses:     sortedUnique(opts.RecordingClasses),
		ClassesWithZeroFired: []string{},
		SelfTests:            []SelfTest{},
	}
	if rep.Unreadable == nil {
		rep.Unreadable = []Unreadable{}
	}
	if rep.Stale == nil {
		rep.Stale = []string{}
	}
	if rep.Unfired == nil {
		rep.Unfired = []Unfired{}
	}
	slices.SortFunc(rep.Unreadable, func(a, b Unreadable) int { return strings.Compare(a.File, b.File) })
	slices.Sort(rep.Stale)
	slices.SortFunc(rep.Unfired, func(a, b Unfired) int {
		return cmpStrings(a.Test, b.Test, a.Surface, b.Surface, a.Leg, b.Leg, a.File, b.File)
	})
	for _, c := range rep.RecordingClasses {
		rep.ByClass[c] = rep.ByClass[c]
	}
	for _, c := range opts.KnownClasses {
		rep.ByClass[c] = rep.ByClass[c]
	}
	for _, c := range sortedKeys(rep.ByClass) {
		if rep.ByClass[c].Fired == 0 && !slices.Contains(rep.RecordingClasses, c) {
			rep.ClassesWithZeroFired = append(rep.ClassesWithZeroFired, c)
		}
	}

	rep.Phases = []Phase{
		phase1(dir, opts.Mode, st, sc),
		phase2(dir, sc),
		phase3(rep),
		phase4(rep),
		phase5(rep),
		phase6(rep, opts, inv),
	}
	if len(opts.Reused) > 0 {
		rep.Reused = opts.Reused
		countReused(rep)
	}
	if opts.Shard {
		rep.Shard = true
		for _, i := range []int{3, 4} {
			if p := &rep.Phases[i]; !p.OK {
				p.OK = true
				p.Detail = "deferred to the union of the shards (program-gate -merge): " + p.Detail
			}
		}
	}
	rep.Certified = true
	for _, p := range rep.Phases {
		rep.Certified = rep.Certified && p.OK
	}
	return rep
}

func phase1(dir string, mode Mode, st stampState, sc scanResult) Phase {
	p := Phase{Number: 1, Name: phaseThisRun}
	stampPath := filepath.Join(dir, faultdir.StampName)
	switch {
	case st.err != nil:
		p.Detail = fmt.Sprintf("cannot examine gate stamp %s: %v", stampPath, st.err)
	case !st.present && mode == Paired:
		p.Detail = fmt.Sprintf("no gate stamp at %s: the pairing broke (no purge+stamp before the battery), or this verification already passed once", stampPath)
	case !st.present:
		p.OK = true
		p.Detail = fmt.Sprintf("no gate stamp at %s (standalone: announced, not fatal); the age of %d record files was not checked", stampPath, sc.records)
	case len(sc.stale) > 0:
		p.Detail = fmt.Sprintf("%d of %d record files are not newer than the stamp of %s (run %q): %s",
			len(sc.stale), sc.records, st.mtime.UTC().Format(time.RFC3339Nano), st.runID, listSome(sortedCopy(sc.stale)))
	default:
		p.OK = true
		p.Detail = fmt.Sprintf("all %d record files postdate the stamp of %s (run %q)", sc.records, st.mtime.UTC().Format(time.RFC3339Nano), st.runID)
		if mode == Standalone {
			p.Detail += "; standalone: the stamp is left in place"
		}
	}
	return p
}

func phase2(dir string, sc scanResult) Phase {
	p := Phase{Number: 2, Name: phaseAllRead}
	switch {
	case sc.dirErr != nil:
		p.Detail = fmt.Sprintf("cannot read fault directory %s: %v", dir, sc.dirErr)
	case len(sc.unreadable) > 0:
		items := make([]string, 0, len(sc.unreadable))
		for _, u := range sortedUnreadable(sc.unreadable) {
			items = append(items, u.File+": "+u.Reason)
		}
		p.Detail = fmt.Sprintf("%d unreadable of %d files: %s", len(sc.unreadable), sc.records+countTemps(sc.unreadable), listSome(items))
	case sc.dirMissing:
		p.OK = true
		p.Detail = fmt.Sprintf("no fault directory at %s: no record files", dir)
	default:
		p.OK = true
		p.Detail = fmt.Sprintf("all %d record files read", sc.read)
	}
	return p
}

func phase3(rep *Report) Phase {
	p := Phase{Number: 3, Name: phaseAllFired}
	if len(rep.Unfired) == 0 {
		p.OK = true
		p.Detail = fmt.Sprintf("all %d armed faults fired", rep.Armed)
		return p
	}
	items := make([]string, 0, len(rep.Unfired))
	for _, u := range rep.Unfired {
		items = append(items, fmt.Sprintf("%s %s/%s/%s %s", u.Test, u.Surface, u.Class, u.Leg, seed.Seed(u.Seed).Say()))
	}
	p.Detail = fmt.Sprintf("%d of %d armed faults did not fire: %s", len(rep.Unfired), rep.Armed, listSome(items))
	return p
}

func phase4(rep *Report) Phase {
	p := Phase{Number: 4, Name: phaseAnyFired}
	if rep.Fired == 0 {
		p.Detail = fmt.Sprintf("zero faults fired (%d armed): a battery that executed no faults proves nothing", rep.Armed)
		return p
	}
	p.OK = true
	p.Detail = fmt.Sprintf("%d faults fired", rep.Fired)
	return p
}

func phase5(rep *Report) Phase {
	p := Phase{Number: 5, Name: phaseClasses, OK: true}
	var zero, fired []string
	for _, c := range rep.RecordingClasses {
		if n := rep.ByClass[c].Fired; n == 0 {
			zero = append(zero, c)
		} else {
			fired = append(fired, fmt.Sprintf("%s %d", c, n))
		}
	}
	switch {
	case len(rep.RecordingClasses) == 0:
		p.Detail = "no recording classes configured"
	case len(zero) > 0:
		p.OK = false
		p.Detail = "recording classes with zero fired: " + strings.Join(zero, ", ")
	default:
		p.Detail = "every recording class fired: " + strings.Join(fired, ", ")
	}
	if len(rep.ClassesWithZeroFired) > 0 {
		p.Detail += "; classes_with_zero_fired (not recording classes): " + strings.Join(rep.ClassesWithZeroFired, ", ")
	}
	return p
}

func phase6(rep *Report, opts Options, inv inventoryResult) Phase {
	p := Phase{Number: 6, Name: phaseSelfTests}
	names := sortedUnique(opts.SelfTests)
	if len(names) == 0 {
		p.OK = true
		p.Detail = "no self-tests configured"
		return p
	}
	// Names read past a test file that does not parse are declared: they
	// prove their tests present; only an absence stays in doubt.
	partial := errors.Is(inv.err, gotest.ErrUnparsed)
	msg := ""
	if inv.err != nil {
		msg = inv.err.Error()
		if len(msg) > maxDetailOutput {
			msg = msg[:maxDetailOutput] + "…"
		}
	}
	switch {
	case opts.Inventory == nil:
		p.Detail = "no test inventory to check the self-tests against"
	case inv.err != nil && !partial:
		p.Detail = "test inventory: " + msg
	}
	have := make(map[string]struct{}, len(inv.names))
	for _, n := range inv.names {
		have[n] = struct{}{}
	}
	var missing []string
	for _, n := range names {
		_, ok := have[n]
		ok = ok && (inv.err == nil || partial) && opts.Inventory != nil
		rep.SelfTests = append(rep.SelfTests, SelfTest{Name: n, Present: ok})
		if !ok {
			missing = append(missing, n)
		}
	}
	if p.Detail != "" {
		return p
	}
	if len(missing) > 0 {
		p.Detail = fmt.Sprintf("self-tests missing from the inventory of %d tests (deleted or renamed): %s", len(inv.names), strings.Join(missing, ", "))
		if partial {
			p.Detail += "; or declared in a test file that does not parse (fix it): " + msg
		}
		return p
	}
	p.OK = true
	p.Detail = fmt.Sprintf("all %d self-tests present: %s", len(names), strings.Join(names, ", "))
	if partial {
		p.Detail += " (some test files do not parse; the battery reports their packages)"
	}
	return p
}

func listSome(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:maxListed], "; ") + fmt.Sprintf("; (+%d more, see %s)", len(items)-maxListed, faultdir.ReportName)
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func sortedUnreadable(us []Unreadable) []Unreadable {
	out := slices.Clone(us)
	slices.SortFunc(out, func(a, b Unreadable) int { return strings.Compare(a.File, b.File) })
	return out
}

func sortedKeys(m map[string]ClassCount) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// cmpStrings compares pairs (a0,b0), (a1,b1), ... lexicographically.
func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}
