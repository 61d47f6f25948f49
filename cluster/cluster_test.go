package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/reexec"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/internal/tier"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{"rig": rigProcess})
	faulttest.Main(m)
}

// moduleRoot is this repository's root, where the test service is built
// from.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// rigProcess runs the rig of the test service on containers as a separate
// process, for the tests that interrupt or kill it. RIG_KEEP keeps it up;
// RIG_HOLD then keeps the process (the owner its resources are labelled
// with) running until its standard input closes, so that no sweep, this
// run's or another's on the same Docker host, can take a kept rig before
// the test looked at it.
func rigProcess() int {
	_, err := Run(context.Background(), jobsService{}, Options{
		Dir: os.Getenv("RIG_DIR"), ResultsRoot: os.Getenv("RIG_RESULTS"),
		Keep: os.Getenv("RIG_KEEP") != "", RequireContainers: true, Ops: 90, Out: os.Stdout,
	})
	if err != nil {
		fmt.Println("rig:", err)
		return 1
	}
	if os.Getenv("RIG_HOLD") != "" {
		fmt.Println(rigHolding)
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	return 0
}

// rigHolding is what a held rig process says once its run is over.
const rigHolding = "rig: holding its resources until standard input closes"

// TestRigOnLocalProcesses is a green run of the rig over the test
// service with its replicas as local processes, the way the rig runs
// without Docker: every kill leg fires on the replica its lever acts on
// and is judged by the service's oracles, each leg's record names the
// service's surface, class cluster and the lever, the artifacts are
// written, and nothing of the layer is left.
func TestRigOnLocalProcesses(t *testing.T) {
	tier.Full(t, "Postgres: a local rig")
	results := t.TempDir()
	const seed, ops = 5, 120
	rep, err := Run(context.Background(), jobsService{}, Options{Dir: moduleRoot(t), ResultsRoot: results, Local: true, Ops: ops,
		TestName: t.Name(), Out: testlog.Writer(t), Seed: seed})
	if err != nil {
		t.Fatalf("local rig: %v", err)
	}
	if rep.Mode != "local processes" || rep.Reason != "asked for" || rep.Service != "jobs" || len(rep.Legs) != len(legs) {
		t.Fatalf("mode %q (reason %q), service %q, %d legs; want local processes, asked for, jobs, %d legs", rep.Mode, rep.Reason, rep.Service, len(rep.Legs), len(legs))
	}
	recs, unreadable, err := gate.ReadRecords(filepath.Join(results, "cluster", "fault"))
	if err != nil || len(unreadable) > 0 || len(recs) != len(legs) {
		t.Fatalf("records: %d, unreadable %v, %v; want one per leg", len(recs), unreadable, err)
	}
	for i, l := range rep.Legs {
		if !l.Fired || len(l.Oracles) != 2 {
			t.Errorf("leg %s: fired %v, %d oracles; want fired and judged by both", l.Name, l.Fired, len(l.Oracles))
		}
		rec := recs[i]
		if rec.Surface != "jobs.cluster" || rec.Class != Class || rec.Test != t.Name()+"/"+l.Name || rec.Leg != l.Lever || !rec.Fired {
			t.Errorf("leg %s's record: surface %q, class %q, test %q, leg %q, fired %v", l.Name, rec.Surface, rec.Class, rec.Test, rec.Leg, rec.Fired)
		}
		p := planLeg(legs[i], seed, 1, ops, rep.Replicas)
		if rec.Seed != seed || rec.Schedule == nil || rec.Schedule.Digest != p.record(legs[i], 0).Digest || !strings.Contains(rec.Replay, "CONTESTED_SEED=5 ") {
			t.Errorf("leg %s's record: seed %d, schedule %+v, replay %q; want seed %d and the plan %q", l.Name, rec.Seed, rec.Schedule, rec.Replay, seed, p.summary(legs[i]))
		}
		for _, want := range evidenceOf(l.Name, p.strikes[0].replica+1) {
			if got := rec.Evidence.Injector + " | " + rec.Evidence.Victim; !strings.Contains(got, want) {
				t.Errorf("leg %s's evidence %q does not say %q", l.Name, got, want)
			}
		}
	}
	artifacts(t, filepath.Join(results, "cluster"), rep.Replicas)
	if dirs := embeddedDirsOf(t, rep.Run); len(dirs) > 0 {
		t.Errorf("the rig left the embedded layer's data directories %v after a normal run", dirs)
	}
}

// evidenceOf is what leg's evidence must say: the replicas its lever
// acted on, from both sides; a one-replica lever's is replica n (from 1),
// the one its plan drew.
func evidenceOf(leg string, n int) []string {
	switch leg {
	case "kill-one":
		return []string{fmt.Sprintf("SIGKILL: replica-%d ", n), fmt.Sprintf("replica-%d acknowledged", n)}
	case "partition":
		return []string{fmt.Sprintf("proxy rig-replica-%d between replica-%d and Postgres disabled (read back enabled=false)", n, n), fmt.Sprintf("while cut off replica-%d acknowledged 0 items", n)}
	default:
		return []string{"SIGKILL: replica-1 ", "SIGKILL: replica-2 ", "SIGKILL: replica-3 ", "replica-3 acknowledged"}
	}
}

// TestTheRigsLegsAreTheFaultSetsLevers: each leg arms a lever of the set
// (the very value levers.Lookup returns for the name it records), and
// every cluster lever of the set has a leg.
func TestTheRigsLegsAreTheFaultSetsLevers(t *testing.T) {
	armed := map[string]bool{}
	for _, l := range legs {
		if got, ok := levers.Lookup(l.lever.Name()); !ok || !reflect.DeepEqual(got, l.lever) {
			t.Errorf("leg %s arms %v, which is not the set's lever of that name (%v)", l.name, l.lever, got)
		}
		armed[l.lever.Name()] = true
	}
	for _, l := range levers.All() {
		if l.Cluster() && !armed[l.Name()] {
			t.Errorf("the cluster lever %s has no leg in the rig", l.Name())
		}
	}
}

// blindService is the test service with a workload that cannot tell which
// replica completed what (DoneBy counts nothing): no lever's victim side
// can see its fault land.
type blindService struct{ jobsService }

func (s blindService) Setup(ctx context.Context, db *pgxpool.Pool) (Workload, Oracle, error) {
	w, o, err := s.jobsService.Setup(ctx, db)
	return blindWorkload{w}, o, err
}

type blindWorkload struct{ Workload }

func (blindWorkload) DoneBy(context.Context, string, time.Time, time.Time) (int, error) {
	return 0, nil
}

// TestALegTheVictimsDidNotFeelDoesNotFire: the legs arm and heal their
// levers as usual and the oracles hold, but with no victim-side evidence
// the levers' fired rule says they did not fire; the rig is red, each
// leg says what was missing, and each record says not fired.
func TestALegTheVictimsDidNotFeelDoesNotFire(t *testing.T) {
	tier.Full(t, "Postgres: a local rig")
	results := t.TempDir()
	rep, err := Run(context.Background(), blindService{}, Options{Dir: moduleRoot(t), ResultsRoot: results, Local: true, Ops: 60,
		TestName: t.Name(), Out: testlog.Writer(t)})
	if rep == nil || len(rep.Legs) != len(legs) {
		t.Fatalf("rig over a blind workload: %v; want every leg run", err)
	}
	if !errors.Is(err, ErrRed) || rep.Green {
		t.Errorf("rig over a blind workload: %v, green %v; want red", err, rep.Green)
	}
	recs, _, err := gate.ReadRecords(filepath.Join(results, "cluster", "fault"))
	if err != nil || len(recs) != len(legs) {
		t.Fatalf("records: %d, %v; want one per leg", len(recs), err)
	}
	for i, l := range rep.Legs {
		if l.Fired || l.Error != "" || !strings.Contains(l.Unfired, levers.ErrUnseen.Error()) || !strings.Contains(l.Injector, "replica-") {
			t.Errorf("leg %s: fired %v, unfired %q, error %q, injector %q; want armed, not fired: %s", l.Name, l.Fired, l.Unfired, l.Error, l.Injector, levers.ErrUnseen)
		}
		if recs[i].Fired || !recs[i].Armed || recs[i].TestFailed {
			t.Errorf("leg %s's record: armed %v, fired %v, test failed %v; want armed and not fired", l.Name, recs[i].Armed, recs[i].Fired, recs[i].TestFailed)
		}
	}
}

// artifacts checks the rig's artifacts in dir: ps.txt, logs.txt with a
// line of every replica, legs.json.
func artifacts(t *testing.T, dir string, replicas int) {
	t.Helper()
	for _, f := range []string{"ps.txt", "logs.txt", "legs.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Errorf("artifact %s missing or empty: %v", f, err)
		}
	}
	logs, _ := os.ReadFile(filepath.Join(dir, "logs.txt"))
	for i := 1; i <= replicas; i++ {
		if !strings.Contains(string(logs), fmt.Sprintf("[replica-%d]", i)) {
			t.Errorf("logs.txt has no line of replica-%d", i)
		}
	}
}

// embeddedDirsOf lists the data directories of embedded layers of run: the
// fault layer names them contested-embedded-* in the temp directory, with
// an owner file that names the run.
func embeddedDirsOf(t *testing.T, run string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), "contested-embedded-*"))
	if err != nil {
		t.Fatal(err)
	}
	var of []string
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "owner")); err == nil && strings.Contains(string(b), run) {
			of = append(of, d)
		}
	}
	return of
}

// TestRigSaysWhereItsReplicasRun checks the mode choice on its own: with
// containers made impossible (an image that exists nowhere), the rig
// chooses local processes and says why, or refuses within seconds when
// containers are required.
func TestRigSaysWhereItsReplicasRun(t *testing.T) {
	t.Setenv(envvar.PostgresImage, "contested.local/does-not-exist:1")
	tests := []struct {
		name    string
		opts    Options
		want    faultlayer.Kind
		wantErr error
		says    string
	}{
		{"asked for local", Options{Local: true}, faultlayer.Embedded, nil, "asked for"},
		{"containers cannot come up", Options{}, faultlayer.Embedded, nil, "does-not-exist"},
		{"containers required", Options{RequireContainers: true}, "", ErrCannotRun, "does-not-exist"},
		{"local and required", Options{Local: true, RequireContainers: true}, "", ErrUsage, "contradict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			kind, reason, err := replicaMode(ctx, tt.opts, testlog.Writer(t))
			if !errors.Is(err, tt.wantErr) || kind != tt.want {
				t.Fatalf("replicaMode = %q, %q, %v; want %q and error %v", kind, reason, err, tt.want, tt.wantErr)
			}
			if got := reason + fmt.Sprint(err); !strings.Contains(got, tt.says) {
				t.Errorf("replicaMode says %q, want it to say %q", got, tt.says)
			}
		})
	}
}

// TestBadOptionsAndSpecsAreUsageErrors: the rig refuses them before it
// sweeps or builds anything.
func TestBadOptionsAndSpecsAreUsageErrors(t *testing.T) {
	good := jobsService{}.Spec()
	tests := []struct {
		name string
		spec func(*Spec)
		opts Options
		says string
	}{
		{"too few replicas", nil, Options{Replicas: 2}, "between 3 and 9"},
		{"too many replicas", nil, Options{Replicas: 10}, "between 3 and 9"},
		{"the spec's replicas", func(s *Spec) { s.Replicas = 1 }, Options{}, "1 replicas"},
		{"a name that cannot name a database", func(s *Spec) { s.Name = "Jobs Service" }, Options{}, `name "Jobs Service"`},
		{"no package", func(s *Spec) { s.Package = "" }, Options{}, "no package"},
		{"no surface", func(s *Spec) { s.Surface = "" }, Options{}, "no surface"},
		{"no command line", func(s *Spec) { s.Args = nil }, Options{}, "no Args"},
		{"a relative health path", func(s *Spec) { s.HealthPath = "healthz" }, Options{}, `health path "healthz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := good
			if tt.spec != nil {
				tt.spec(&spec)
			}
			tt.opts.Dir, tt.opts.ResultsRoot = moduleRoot(t), t.TempDir()
			var out strings.Builder
			tt.opts.Out = &out
			_, err := Run(context.Background(), specService{jobsService{}, spec}, tt.opts)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err = %v, want a usage error saying %q", err, tt.says)
			}
			if out.Len() > 0 {
				t.Errorf("the rig started before refusing: %s", out.String())
			}
		})
	}
}

// specService is a service with another spec.
type specService struct {
	Service
	spec Spec
}

func (s specService) Spec() Spec { return s.spec }

// TestTheRigWaitsForEveryReplicasHealthEndpoint: a replica that runs but
// never answers 200 on the health path keeps the rig from its legs; it
// fails bring-up, naming the replica and what the endpoint said.
func TestTheRigWaitsForEveryReplicasHealthEndpoint(t *testing.T) {
	tier.Full(t, "Postgres: a local rig")
	rep, err := Run(context.Background(), jobsService{healthPath: "/not-served"}, Options{Dir: moduleRoot(t), ResultsRoot: t.TempDir(),
		Local: true, HealthWait: 3 * time.Second, Out: testlog.Writer(t)})
	if !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), "replica-1 did not answer 200 on /not-served") || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v; want the rig unable to run, replica-1 answering 404 on /not-served", err)
	}
	if rep == nil || len(rep.Legs) != 0 {
		t.Errorf("legs ran without healthy replicas: %+v", rep)
	}
}

// startRig runs the rig on containers in a child process and returns
// once its replicas are up. When the child exits before that (its
// bring-up failed), it fails the test at once with the child's output.
func startRig(t *testing.T, env ...string) (*exec.Cmd, *rigOutput) {
	t.Helper()
	return startRigIn(t, nil, env...)
}

// startRigIn is startRig with the child's standard input read from in.
func startRigIn(t *testing.T, in io.Reader, env ...string) (*exec.Cmd, *rigOutput) {
	t.Helper()
	cmd := reexec.Command(t, "rig", append([]string{"RIG_DIR=" + moduleRoot(t), "RIG_RESULTS=" + t.TempDir()}, env...)...)
	cmd.Stdin = in
	cmd.Stderr = os.Stderr
	// A pipe of our own, not StdoutPipe: Wait closes StdoutPipe's read end
	// when the child exits, which loses the last lines a reader slowed by a
	// busy machine had not read yet. This one is read to its end.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	out := &rigOutput{done: make(chan struct{})}
	go out.read(r)
	up, _ := out.waitFor("replicas up", 5*time.Minute)
	switch {
	case up:
	case out.ended():
		cmd.Wait()
		t.Fatalf("the rig exited (%v) before its replicas came up:\n%s", cmd.ProcessState, out)
	default:
		cmd.Process.Kill()
		t.Fatalf("the rig did not come up within 5 minutes and is still running:\n%s", out)
	}
	return cmd, out
}

// rigOutput is what a rig child process printed, read to its end.
type rigOutput struct {
	mu   sync.Mutex
	b    strings.Builder
	done chan struct{} // closed once the child's output ended
}

func (o *rigOutput) read(r io.ReadCloser) {
	defer close(o.done)
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		o.mu.Lock()
		o.b.WriteString(sc.Text() + "\n")
		o.mu.Unlock()
	}
}

// String is the output so far; all of it once ended.
func (o *rigOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

func (o *rigOutput) ended() bool {
	select {
	case <-o.done:
		return true
	default:
		return false
	}
}

// wait waits until the child's output ended, up to d.
func (o *rigOutput) wait(d time.Duration) bool {
	select {
	case <-o.done:
		return true
	case <-time.After(d):
		return false
	}
}

// waitFor waits until the output holds s (true), or it ended without it,
// or d passed (false).
func (o *rigOutput) waitFor(s string, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		if strings.Contains(o.String(), s) {
			return true, nil
		}
		if o.ended() {
			return strings.Contains(o.String(), s), errors.New("the output ended")
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("not within %s", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSIGINTMidRunLeavesNothingLabelled(t *testing.T) {
	faulttest.Containers(t)
	cli := dockerenv.Require(t)
	cmd, out := startRig(t)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the rig did not stop within 2 minutes of SIGINT:\n%s", out)
	}
	out.wait(time.Minute)
	if !strings.Contains(out.String(), "tearing down") {
		t.Errorf("the rig did not say it tore down:\n%s", out)
	}
	left, err := reap.Leftovers(context.Background(), cli, reap.OwnedBy(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Errorf("SIGINT mid-run left %s: %+v", left, left)
	}
}

// TestSIGKILLedRigIsSweptByTheNextRun: a rig killed with SIGKILL leaves
// its resources behind, and the next run's sweep reaps them. What the rig
// runs is counted while it runs: once it is killed its resources are any
// sweep's, and another run's on the same Docker host may reap them first,
// which is the property itself.
func TestSIGKILLedRigIsSweptByTheNextRun(t *testing.T) {
	faulttest.Containers(t)
	cli := dockerenv.Require(t)
	cmd, _ := startRig(t)
	ctx := context.Background()
	left, err := reap.Leftovers(ctx, cli, reap.OwnedBy(cmd.Process.Pid))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if len(left.Containers) < 3 {
		t.Fatalf("the rig ran with %s: the test did not catch it running", left)
	}
	// The sweep is the first thing Run does.
	if err := Sweep(ctx, testlog.Writer(t)); err != nil {
		t.Fatal(err)
	}
	if left, _ = reap.Leftovers(ctx, cli, reap.OwnedBy(cmd.Process.Pid)); !left.Empty() {
		t.Errorf("after the sweep, the killed rig still has %s: %+v", left, left)
	}
}

// TestAKeptRigStaysUpUntilTheNextSweep: a rig run with Keep ends without
// tearing down, says so, and leaves its resources labelled kept; the next
// sweep reaps them once their owner is gone. The rig's process is held
// alive (RIG_HOLD) while the test looks, so that no other run's sweep on
// the same Docker host takes the rig first: it owns what it inspects.
func TestAKeptRigStaysUpUntilTheNextSweep(t *testing.T) {
	faulttest.Containers(t)
	cli := dockerenv.Require(t)
	// An *os.File, not an io.Pipe: Wait then has no copy of ours to wait
	// for when the child exits before its hold (a rig that failed).
	hold, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer release.Close()
	cmd, out := startRigIn(t, hold, "RIG_KEEP=1", "RIG_HOLD=1")
	hold.Close() // the child has its own
	if ok, err := out.waitFor(rigHolding, 10*time.Minute); !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the kept rig did not finish its run (%v):\n%s", err, out)
	}
	if !strings.Contains(out.String(), "kept up for inspection") {
		t.Errorf("the rig does not say it was kept:\n%s", out)
	}
	ctx := context.Background()
	left, _ := reap.Leftovers(ctx, cli, reap.OwnedBy(cmd.Process.Pid))
	release.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kept rig: %v\n%s", err, out)
	}
	out.wait(time.Minute)
	if len(left.Containers) < 5 {
		t.Fatalf("kept rig has %s after its run, want the replicas, Postgres and Toxiproxy still there:\n%s", left, out)
	}
	if err := Sweep(ctx, testlog.Writer(t)); err != nil {
		t.Fatal(err)
	}
	if left, _ = reap.Leftovers(ctx, cli, reap.OwnedBy(cmd.Process.Pid)); !left.Empty() {
		t.Errorf("the next sweep did not reap the kept rig: %s", left)
	}
}

// exitedReplicas are replicas that have all exited, as after a start-up
// that failed once the rig's health wait was over.
type exitedReplicas struct{ replicas }

func (exitedReplicas) Names() []string                   { return []string{"replica-1", "replica-2", "replica-3"} }
func (exitedReplicas) Running(context.Context, int) bool { return false }
func (exitedReplicas) Logs(context.Context) string {
	return "[replica-1] connect: connection refused\n"
}

// idleWorkload is a workload nothing ever completes.
type idleWorkload struct{ Workload }

func (idleWorkload) Done(context.Context, string) (int, error) { return 0, nil }

// TestALegStopsWaitingWhenNoReplicaRuns: with every replica gone, nothing
// will ever be completed, and the leg says so at once, with the replicas'
// last lines, instead of after its minute.
func TestALegStopsWaitingWhenNoReplicaRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &rig{work: idleWorkload{}, replicas: exitedReplicas{}}
	err := r.waitDone(ctx, "kill-one", 10)
	if err == nil || !strings.Contains(err.Error(), "no replica is running") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("waitDone with every replica exited: %v; want it to say no replica is running, with their last lines", err)
	}
}
