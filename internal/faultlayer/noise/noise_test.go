package noise

import (
	"context"
	"encoding/json"
	"errors"
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

// TestTheNeighbourFiresWithEvidenceFromBothSides: a neighbour of one busy
// thread per core gets at least half a core each and slows a probe beside
// it by at least a quarter, and its record says so from both sides; the
// writers write and leave no file behind.
func TestTheNeighbourFiresWithEvidenceFromBothSides(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{CPU: runtime.NumCPU(), IO: 1}
	n, err := Start(context.Background(), spec, 42, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Long enough for a few quiet windows, however slowly this machine
	// runs the probe: the samples, not a clock, say when.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if loud, quiet := n.Samples(); loud >= 20 && quiet >= 6 {
			break
		}
	}
	e := n.Stop()
	t.Logf("%s; %s", e.Injector(), e.VictimSide())
	if e.Taken < e.TakenNeeded() || e.Slowdown < MinSlowdown || e.IOBytes == 0 || !e.Fired() {
		t.Fatalf("the neighbour did not fire: took %.2f cores (needed %.2f: a quarter of the %.2f of a core a thread got beside them, for each), slowdown %.2f, %d bytes written",
			e.Taken, e.TakenNeeded(), e.ThreadShare, e.Slowdown, e.IOBytes)
	}
	if math.Abs(e.Duty*float64(spec.CPU)-e.Taken) > 1e-9 {
		t.Errorf("duty %.3f per thread of %d threads is not the %.3f cores taken", e.Duty, spec.CPU, e.Taken)
	}
	r := e.Record("battery", Replay(spec, 42))
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if r.Class != Class || r.Surface != Surface || r.Leg != Leg || !r.Fired || r.Seed != 42 ||
		!strings.Contains(r.Evidence.Injector, "duty cycle") || !strings.Contains(r.Evidence.Injector, "cores") || !strings.Contains(r.Evidence.Victim, "less of the CPU") ||
		!strings.Contains(r.Replay, "CONTESTED_NOISE="+spec.String()) {
		t.Errorf("record: %+v", r)
	}
	if entries, _ := filepathGlob(dir); len(entries) != 0 {
		t.Errorf("the writers left %v behind", entries)
	}
	if runtime.GOMAXPROCS(0) != runtime.NumCPU() && runtime.GOMAXPROCS(0) > runtime.NumCPU() {
		t.Errorf("GOMAXPROCS is %d after Stop", runtime.GOMAXPROCS(0))
	}
}

// TestAQuietNeighbourDoesNotFire: evidence that shows no slowdown, or hogs
// that got no CPU, is not a fired fault, and the record says what to do.
// The CPU the hogs must take is relative to what a thread of the machine
// gets in their quiet windows, yet hogs that took next to nothing of it
// still do not fire, however saturated the machine.
func TestAQuietNeighbourDoesNotFire(t *testing.T) {
	for _, e := range []Evidence{
		{Spec: Spec{CPU: 2}, Duty: 0.97, Slowdown: 1.05, Baseline: time.Millisecond, Loaded: 1050 * time.Microsecond},
		{Spec: Spec{CPU: 2}, Duty: 0.1, Slowdown: 3},
		{Spec: Spec{IO: 1}, IOBytes: 0, Slowdown: 2},
		// On an idle machine (a thread beside them gets two thirds of a core), two
		// threads that took a fifth of a core did not take their share.
		{Spec: Spec{CPU: 2}, Taken: 0.2, Duty: 0.1, Slowdown: 3, ThreadShare: 0.67},
		// On a saturated one (a thread beside them gets a tenth of a core), hogs that
		// took a hundredth of a core did not land, whatever slowed the probe.
		{Spec: Spec{CPU: 2}, Taken: 0.01, Duty: 0.005, Slowdown: 4, ThreadShare: 0.1},
	} {
		r := e.Record("battery", "")
		if r.Fired || e.Fired() {
			t.Errorf("%+v fired", e)
		}
		if e.Slowdown < MinSlowdown && !strings.Contains(r.Evidence.Victim, "did not slow this machine") {
			t.Errorf("victim evidence %q does not say the machine was not slowed", r.Evidence.Victim)
		}
		if _, err := faultrecord.ParseRecord(mustJSON(t, r)); err != nil {
			t.Errorf("the record does not parse: %v", err)
		}
	}
}

// TestASaturatedMachinesNeighbourFires: beside load 20 on two cores, a
// thread gets a sliver of a core; two hogs that took 0.21 cores then took
// as much as any thread got, and with the probe slowed 4.28 times the
// neighbour fired (the figures of a run a fixed quarter-core threshold
// refused).
func TestASaturatedMachinesNeighbourFires(t *testing.T) {
	e := Evidence{Spec: Spec{CPU: 2, IO: 1}, Taken: 0.21, Duty: 0.105, IOBytes: 1 << 20, Slowdown: 4.28, ThreadShare: 0.1, Cores: 2, Load: 20}
	if !e.Fired() {
		t.Fatalf("%+v did not fire (needed %.3f cores)", e, e.TakenNeeded())
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
