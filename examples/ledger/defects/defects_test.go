package defects_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/examples/internal/planted"
	"github.com/contested/contested/examples/ledger/oracle"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// TestPlantedDefectsAreCaught proves the oracles have teeth: for each oracle, a defect planted
// behind a test-only build tag (normal builds cannot reach it; see defects.go) must turn the
// contract that is meant to catch it RED, with that oracle named, while its fault fired for
// real. Each case runs the contract's leg as a separate go test with the tag, on this test's
// fault layer, with a fixed seed and a private results directory (its records are evidence
// about the defect, not about this battery).
func TestPlantedDefectsAreCaught(t *testing.T) {
	downstream := resetSeed(t, "reset:downstream")
	tests := []struct {
		name     string
		seed     int64 // 0: 424242
		tag      string
		pkg      string
		run      string // -run pattern: the contract test and its leg
		test     string // the leg's test name in records
		lever    string
		oracle   string
		artifact bool // the oracle leaves a visualization under the results directory
	}{
		{
			name: "applying without the idempotency check breaks exactly-once under a burst",
			tag:  "contested_defect_noidempotency", pkg: "./examples/ledger",
			run: "^TestConsumerContract$/^burst$", test: "TestConsumerContract/burst", lever: "burst",
			oracle: oracle.ExactlyOnce,
		},
		{
			name: "acknowledging a batch before applying it loses acknowledged transfers when the worker is killed",
			tag:  "contested_defect_ackbeforeapply", pkg: "./examples/ledger",
			run: "^TestConsumerContract$/^crash-and-resume$", test: "TestConsumerContract/crash-and-resume", lever: "crash-and-resume",
			oracle: oracle.NoLostAck,
		},
		{
			name: "debiting and crediting in separate transactions breaks conservation under reset",
			tag:  "contested_defect_nonatomic", pkg: "./examples/ledger",
			run: "^TestStoreContract$/^reset$", test: "TestStoreContract/reset", lever: "reset",
			oracle: oracle.Conservation,
		},
		{
			name: "a non-atomic transfer is not linearizable against the Accounts model",
			tag:  "contested_defect_nonatomic", pkg: "./examples/ledger",
			run: "^TestStoreContract$/^reset$", test: "TestStoreContract/reset", lever: "reset",
			oracle: oracle.Linearizability, artifact: true,
		},
		{
			name: "reading the balance without FOR UPDATE and then writing it loses concurrent transfers",
			tag:  "contested_defect_lostlock", pkg: "./examples/ledger",
			run: "^TestStoreContract$/^reset$", test: "TestStoreContract/reset", lever: "reset",
			oracle: oracle.Journal,
		},
		{
			name: "a check-then-act race decides on a balance another transfer already changed",
			tag:  "contested_defect_lostlock", pkg: "./examples/ledger",
			run: "^TestStoreContract$/^reset$", test: "TestStoreContract/reset", lever: "reset",
			oracle: oracle.Linearizability, artifact: true,
		},
		{
			name: "a rejected transfer reported to the client as applied is a lost acknowledgement",
			tag:  "contested_defect_rejectedasapplied", pkg: "./examples/ledger",
			run: "^TestStoreContract$/^confirm-timeout$", test: "TestStoreContract/confirm-timeout", lever: "confirm-timeout",
			oracle: oracle.NoLostAck,
		},
		{
			name: "a rejected transfer reported to the client as applied is not linearizable",
			tag:  "contested_defect_rejectedasapplied", pkg: "./examples/ledger",
			run: "^TestStoreContract$/^confirm-timeout$", test: "TestStoreContract/confirm-timeout", lever: "confirm-timeout",
			oracle: oracle.Linearizability, artifact: true,
		},
		{
			name: "a retry inside Store.Transfer answers a transfer applied under a downstream reset as not applied",
			seed: downstream, tag: "contested_defect_retryinside", pkg: "./examples/ledger",
			run: "^TestStoreContract$/^reset$", test: "TestStoreContract/reset", lever: "reset",
			oracle: oracle.ExactlyOnce,
		},
		{
			name: "releasing a lease without the epoch fence breaks the Lease model",
			tag:  "contested_defect_unfencedrelease", pkg: "./examples/leasetable",
			run: "^TestLeaseContract$/^reset$", test: "TestLeaseContract/reset", lever: "reset",
			oracle: oracle.Linearizability, artifact: true,
		},
	}
	layer := faulttest.Layer(t)
	root := planted.ModuleRoot(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the defective variants: %v", err)
	}
	// One run per tag and leg serves every oracle it should trip; its results directory
	// belongs to the parent test so that the cases sharing it all see it.
	ran := map[string][]byte{}
	results := map[string]string{}
	base := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := cmp.Or(tt.seed, 424242)
			key := fmt.Sprintf("%s %s %s %d", tt.tag, tt.pkg, tt.run, seed)
			out, ok := ran[key]
			if !ok {
				dir, err := os.MkdirTemp(base, "results-")
				if err != nil {
					t.Fatal(err)
				}
				results[key] = dir
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				out, err = planted.Run(ctx, goBin, root, tt.tag, tt.pkg, tt.run, seed, 1, append(layer.Env(), envvar.ResultsDir+"="+results[key]))
				ran[key] = out
				if err == nil {
					t.Fatalf("the contract stayed GREEN with the planted defect %s:\n%s", tt.tag, planted.Tail(out))
				}
			}
			dir := results[key]
			want := "oracle " + tt.oracle + ": VIOLATED"
			if !bytes.Contains(out, []byte(want)) {
				t.Fatalf("the contract went RED with %s, but not because %q (the oracle that must catch it):\n%s", tt.tag, want, planted.Tail(out))
			}
			if !bytes.Contains(out, []byte("--- FAIL: "+tt.test)) {
				t.Errorf("%s did not fail:\n%s", tt.test, planted.Tail(out))
			}
			if bytes.Contains(out, []byte("ARMED BUT DID NOT FIRE")) {
				t.Errorf("the %s leg did not fire, so the RED proves nothing about the oracle:\n%s", tt.lever, planted.Tail(out))
			}
			if !planted.FiredRecord(t, dir, tt.test, tt.lever) {
				t.Errorf("no fired %s record for %s under %s: the fault did not run", tt.lever, tt.test, dir)
			}
			if tt.artifact {
				m := regexp.MustCompile(`see (\S+\.html)`).FindSubmatch(out)
				if m == nil {
					t.Fatalf("the %s verdict names no visualization:\n%s", tt.oracle, planted.Tail(out))
				}
				if p := string(m[1]); !strings.HasPrefix(p, filepath.Join(dir, oracle.VisualizationDir)) {
					t.Errorf("visualization %s is not under the results directory %s", p, dir)
				} else if _, err := os.Stat(p); err != nil {
					t.Errorf("the visualization the verdict names is missing: %v", err)
				}
			}
		})
	}
}

// TestPlantedWebDefectsAreCaught proves the web front's tests have teeth: each defect planted
// in the front behind a test-only build tag must turn TestWebFront RED in the case meant to
// catch it, saying why. The front has no oracle of its own: its tests read the ledger directly
// after each case, and the failure they print is the evidence.
func TestPlantedWebDefectsAreCaught(t *testing.T) {
	tests := []struct {
		name string
		tag  string
		run  string // -run pattern of the case that must fail
		want string // in its failure
	}{
		{
			name: "a retry with a new idempotency key moves the money twice after a reset answer",
			tag:  "contested_defect_webnewkey", run: "^TestWebFront$/^the_answer_reset",
			want: "want exactly 50 moved (once)",
		},
		{
			name: "a retry with a new idempotency key moves the money twice after a slow answer",
			tag:  "contested_defect_webnewkey", run: "^TestWebFront$/^backend_slower",
			want: "want exactly 40 moved (once)",
		},
		{
			name: "an error page on a backend timeout instead of the slow banner",
			tag:  "contested_defect_weberror", run: "^TestWebFront$/^backend_slower",
			want: `GET /: status 500, banner "", outcome ""; want 200, "slow", ""`,
		},
	}
	layer := faulttest.Layer(t)
	root := planted.ModuleRoot(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the defective variants: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			out, err := planted.Run(ctx, goBin, root, tt.tag, "./examples/ledger", tt.run, 424242, 1, append(layer.Env(), envvar.ResultsDir+"="+t.TempDir()))
			if err == nil {
				t.Fatalf("TestWebFront stayed GREEN with the planted defect %s:\n%s", tt.tag, planted.Tail(out))
			}
			if !bytes.Contains(out, []byte(tt.want)) {
				t.Fatalf("TestWebFront went RED with %s, but not because %q:\n%s", tt.tag, tt.want, planted.Tail(out))
			}
		})
	}
}

// TestTheRetryDefectHidesFromAnUpstreamReset: the retry planted inside Store.Transfer fails
// only on some schedules. On a seed whose reset schedule resets only upstream, every transfer
// a reset failed never reached the server, the retry decides it truly, and the contract stays
// GREEN: the defect is the schedule's to find (contested's seed picker covers both directions),
// and the seed that found it replays it.
func TestTheRetryDefectHidesFromAnUpstreamReset(t *testing.T) {
	layer := faulttest.Layer(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the defective variant: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seed := resetSeed(t, "reset:upstream")
	out, err := planted.Run(ctx, goBin, planted.ModuleRoot(t), "contested_defect_retryinside", "./examples/ledger", "^TestStoreContract$/^reset$", seed, 1,
		append(layer.Env(), envvar.ResultsDir+"="+t.TempDir()))
	if err != nil {
		t.Fatalf("seed %d resets only upstream, yet the contract went RED with the retry defect: %v\n%s", seed, err, planted.Tail(out))
	}
	if !bytes.Contains(out, []byte("oracle "+oracle.ExactlyOnce+": held")) {
		t.Errorf("the contract passed without exactly-once holding:\n%s", planted.Tail(out))
	}
}

// resetSeed is the first seed whose level-1 reset schedule has exactly the one trait want
// ("reset:upstream" or "reset:downstream").
func resetSeed(t *testing.T, want string) int64 {
	t.Helper()
	for seed := int64(1); seed < 1000; seed++ {
		if tr := levers.NewSchedule(levers.Reset, seed, levers.Scope{Level: 1}).Traits(); len(tr) == 1 && tr[0] == want {
			return seed
		}
	}
	t.Fatalf("no seed under 1000 draws a reset schedule of %s alone", want)
	return 0
}
