package noise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
)

func TestParse(t *testing.T) {
	cores := runtime.NumCPU()
	tests := []struct {
		in   string
		want Spec
		err  bool
	}{
		{"", Spec{}, false},
		{"off", Spec{}, false},
		{"cpu", Spec{CPU: cores}, false},
		{"cpu:2", Spec{CPU: 2}, false},
		{"io:1", Spec{IO: 1}, false},
		{"cpu:2,io:1", Spec{CPU: 2, IO: 1}, false},
		{" cpu:1 , io ", Spec{CPU: 1, IO: 1}, false},
		{"cpu:0", Spec{}, true},
		{"cpu:many", Spec{}, true},
		{"gpu:1", Spec{}, true},
		{"cpu:100000", Spec{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.err {
				if !errors.Is(err, ErrSpec) {
					t.Fatalf("Parse(%q) = %v, %v; want ErrSpec", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if again, err := Parse(got.String()); err != nil || again != got {
				t.Errorf("Parse(%q.String()=%q) = %v, %v", tt.in, got.String(), again, err)
			}
		})
	}
}

// TestTheNeighbourFiresWithEvidenceFromBothSides: a neighbour of busy
// threads and a writer takes CPU from the machine and slows a probe beside
// it against the quiet windows next to each sample, and its record says so
// from both sides; the writers write and leave no file behind. The same
// checks refuse a neighbour whose threads do nothing.
//
// The neighbour is sized relative to what a thread of this machine gets
// when the test starts: on an idle machine one busy thread a core, inside
// a busy battery (a sliver of a core a thread) as many as slow that thread
// by half. The lever's thresholds are relative to what a thread gets, and
// so is the test; the probe's pairs compare samples taken milliseconds
// apart, so the battery's other work weighs on both alike.
func TestTheNeighbourFiresWithEvidenceFromBothSides(t *testing.T) {
	hogs := hogsFor(threadShareNow())
	tests := []struct {
		name string
		spec Spec
		work func(*[32]byte)
		// pairs is how many pairs to wait for; 0 stops at once, as a
		// battery of a few hundred milliseconds does.
		pairs int
		fires bool
	}{
		{"a neighbour of busy threads and a writer fires", Spec{CPU: hogs, IO: 1}, hashSlice, 20, true},
		{"a neighbour stopped at once still measures, and fires", Spec{CPU: hogs}, hashSlice, 0, true},
		{"a neighbour whose threads do nothing does not fire", Spec{CPU: hogs}, func(*[32]byte) { time.Sleep(50 * time.Millisecond) }, 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			n, err := start(context.Background(), tt.spec, 42, dir, tt.work)
			if err != nil {
				t.Fatal(err)
			}
			// The samples, not a clock, say when: a slow machine takes its
			// pairs slowly.
			for deadline := time.Now().Add(time.Minute); n.Pairs() < tt.pairs && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			}
			e := n.Stop()
			t.Logf("%d hogs: %s; %s", hogs, e.Injector(), e.VictimSide())
			if e.Unmeasured != "" || e.Samples < 2*MinPairs || e.Baseline <= 0 || e.Loaded <= 0 {
				t.Fatalf("the probe did not measure the neighbour: %d samples, baseline %s, loaded %s: %s", e.Samples, e.Baseline, e.Loaded, e.Unmeasured)
			}
			if tt.pairs == 0 && e.Late == 0 {
				t.Errorf("stopped at once, no pair was taken after the battery: %+v", e)
			}
			if err := fired(e); (err == nil) != tt.fires {
				t.Fatalf("fired: %v, want %v", err, tt.fires)
			}
			if math.Abs(e.Duty*float64(tt.spec.CPU)-e.Taken) > 1e-9 {
				t.Errorf("duty %.3f per thread of %d threads is not the %.3f cores taken", e.Duty, tt.spec.CPU, e.Taken)
			}
			r := e.Record("battery", Replay(tt.spec, 42))
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
			if r.Class != Class || r.Surface != Surface || r.Leg != Leg || r.Fired != tt.fires || r.Seed != 42 ||
				!strings.Contains(r.Evidence.Injector, "duty cycle") || !strings.Contains(r.Evidence.Victim, "less of the CPU") ||
				!strings.Contains(r.Replay, "CONTESTED_NOISE="+tt.spec.String()) {
				t.Errorf("record: %+v", r)
			}
			if !tt.fires && !strings.Contains(r.Evidence.Victim, "NOT fired: its busy threads took") {
				t.Errorf("the victim evidence does not say the threads took too little: %q", r.Evidence.Victim)
			}
			if entries, _ := filepathGlob(dir); len(entries) != 0 {
				t.Errorf("the writers left %v behind", entries)
			}
			if runtime.GOMAXPROCS(0) > runtime.NumCPU() {
				t.Errorf("GOMAXPROCS is %d after Stop", runtime.GOMAXPROCS(0))
			}
		})
	}
}

// fired checks a neighbour's evidence from both sides, saying what is
// missing.
func fired(e Evidence) error {
	if e.Taken < e.TakenNeeded() || e.Slowdown < MinSlowdown || e.Spec.IO > 0 && e.IOBytes == 0 || !e.Fired() {
		return fmt.Errorf("the neighbour did not fire: took %.2f cores (needed %.2f: a quarter of the %.2f of a core a thread got beside them, for each), slowdown %.2f, %d bytes written",
			e.Taken, e.TakenNeeded(), e.ThreadShare, e.Slowdown, e.IOBytes)
	}
	return nil
}

// threadShareNow is the share of the CPU a thread of this machine gets
// now: the median of a few runs of the probe's unit of work.
func threadShareNow() float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := &Neighbour{unit: calibrate()}
	ss := make([]sample, 5)
	for i := range ss {
		ss[i] = n.timeUnit()
	}
	return medianShare(ss)
}

// hogsFor is a neighbour that slows a thread which gets share of a core by
// about half: one busy thread a core on an idle machine, more on a busy
// one, at most maxPerCore a core.
func hogsFor(share float64) int {
	cores := runtime.NumCPU()
	need := int(math.Ceil(float64(cores) / (2 * max(share, 0.01))))
	return min(max(need, cores), maxPerCore*cores)
}

// TestAnInterruptedNeighbourSaysItCouldNotMeasure: a run interrupted
// before the probe took its pairs is not compared against a zero
// baseline: the record is not fired and says why, and its advice is not
// to add hogs.
func TestAnInterruptedNeighbourSaysItCouldNotMeasure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Start(ctx, Spec{CPU: 1}, 7, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	e := n.Stop()
	r := e.Record("battery", Replay(e.Spec, 7))
	t.Logf("%s; %s", r.Evidence.Injector, r.Evidence.Victim)
	if e.Fired() || r.Fired {
		t.Fatalf("an interrupted neighbour fired: %+v", e)
	}
	if !strings.Contains(e.Unmeasured, "interrupted") || !strings.Contains(r.Evidence.Victim, "could not measure the neighbour: the run was interrupted") {
		t.Errorf("the evidence does not say the run was interrupted: unmeasured %q, victim %q", e.Unmeasured, r.Evidence.Victim)
	}
	if strings.Contains(r.Evidence.Victim, "more hogs") || strings.Contains(r.Evidence.Victim, "against 0s") {
		t.Errorf("the victim evidence compares against nothing, or asks for hogs: %q", r.Evidence.Victim)
	}
}

// measured is what a probe that took ten pairs of samples records.
func measured(e Evidence) Evidence {
	e.Samples, e.Baseline, e.Loaded, e.Cores = 20, 5*time.Millisecond, time.Duration(e.Slowdown*5e6), 2
	return e
}

// TestAQuietNeighbourDoesNotFire: evidence that shows no slowdown, hogs
// that got no CPU, writers that wrote nothing, or a probe that could not
// measure is not a fired fault, and the record names the cause and what
// to do. The CPU the hogs must take is relative to what a thread of the
// machine got beside them, yet hogs that took next to nothing of it still
// do not fire, however saturated the machine.
func TestAQuietNeighbourDoesNotFire(t *testing.T) {
	for _, tt := range []struct {
		name  string
		e     Evidence
		cause string
	}{
		{"a machine with cores to spare", measured(Evidence{Spec: Spec{CPU: 2}, Taken: 1.9, Duty: 0.95, Slowdown: 1.05, ThreadShare: 0.95}),
			"under 1.10x: the machine had cores to spare (a thread beside the neighbour still got 0.95 of a core): give it more hogs (CONTESTED_NOISE=cpu:4)"},
		{"a machine other work keeps busy", measured(Evidence{Spec: Spec{CPU: 2}, Taken: 0.2, Duty: 0.1, Slowdown: 1.05, ThreadShare: 0.1}),
			"under 1.10x: other work already kept this machine busy (a thread beside the neighbour got 0.10 of a core), so 2 more threads took little more from it: give it more hogs"},
		{"hogs that got a tenth of a core each on an idle machine", measured(Evidence{Spec: Spec{CPU: 2}, Taken: 0.2, Duty: 0.1, Slowdown: 3, ThreadShare: 0.67}),
			"its busy threads took 0.20 cores, under the 0.34 needed"},
		// On a saturated one (a thread beside them gets a tenth of a core), hogs that
		// took a hundredth of a core did not land, whatever slowed the probe.
		{"hogs that took a hundredth of a core on a saturated machine", measured(Evidence{Spec: Spec{CPU: 2}, Taken: 0.01, Duty: 0.005, Slowdown: 4, ThreadShare: 0.1}),
			"its busy threads took 0.01 cores, under the 0.05 needed"},
		{"writers that wrote nothing", measured(Evidence{Spec: Spec{IO: 1}, Slowdown: 2, ThreadShare: 0.5}), "its 1 writers wrote nothing"},
		// The run of the issue: a battery of a second, no quiet window, a baseline of 0s.
		{"a probe without a baseline", Evidence{Spec: Spec{CPU: 2}, Taken: 1.11, Duty: 0.55, Loaded: 8510 * time.Microsecond, Samples: 13, ThreadShare: 0.59},
			"the probe could not measure the neighbour: it took 13 samples, and needs 7 pairs of them with a baseline"},
		{"a probe that could not measure, whatever its figures", measured(Evidence{Spec: Spec{CPU: 2}, Taken: 1.5, Duty: 0.75, Slowdown: 2, ThreadShare: 0.5, Unmeasured: "the run was interrupted"}),
			"the probe could not measure the neighbour: the run was interrupted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.e.Record("battery", "")
			if r.Fired || tt.e.Fired() {
				t.Errorf("%+v fired", tt.e)
			}
			if !strings.Contains(r.Evidence.Victim, "NOT fired: "+tt.cause) {
				t.Errorf("victim evidence %q does not name the cause %q", r.Evidence.Victim, tt.cause)
			}
			if strings.Contains(tt.cause, "could not measure") && (strings.Contains(r.Evidence.Victim, "more hogs") || strings.Contains(r.Evidence.Victim, "less of the CPU")) {
				t.Errorf("victim evidence %q compares what it could not measure, or asks for hogs", r.Evidence.Victim)
			}
			if _, err := faultrecord.ParseRecord(mustJSON(t, r)); err != nil {
				t.Errorf("the record does not parse: %v", err)
			}
		})
	}
}

// TestASaturatedMachinesNeighbourFires: beside load 20 on two cores, a
// thread gets a sliver of a core; two hogs that took 0.21 cores then took
// as much as any thread got, and with the probe slowed 4.28 times the
// neighbour fired (the figures of a run a fixed quarter-core threshold
// refused).
func TestASaturatedMachinesNeighbourFires(t *testing.T) {
	e := measured(Evidence{Spec: Spec{CPU: 2, IO: 1}, Taken: 0.21, Duty: 0.105, IOBytes: 1 << 20, Slowdown: 4.28, ThreadShare: 0.1, Load: 20})
	if !e.Fired() {
		t.Fatalf("%+v did not fire (needed %.3f cores): %s", e, e.TakenNeeded(), e.Cause())
	}
	if got, want := e.TakenNeeded(), MinTaken*0.1*2; math.Abs(got-want) > 1e-9 {
		t.Errorf("TakenNeeded = %.3f, want %.3f", got, want)
	}
	if one := (Evidence{Spec: Spec{CPU: 1}, ThreadShare: 1}).TakenNeeded(); one != MinTaken {
		t.Errorf("one thread beside a probe that got a whole core: TakenNeeded = %.3f, want the quarter core %.2f", one, MinTaken)
	}
}

func filepathGlob(dir string) ([]string, error) { return filepath.Glob(filepath.Join(dir, "*")) }

func mustJSON(t *testing.T, r faultrecord.Record) []byte {
	t.Helper()
	r.Schema, r.RunID, r.Package = faultrecord.Schema, "run", "example.com/m"
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
