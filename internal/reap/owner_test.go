package reap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{
		// print-owner prints the helper's own owner identity: run inside
		// another PID namespace, it is what a run in a container labels its
		// resources with.
		"print-owner": func() int { fmt.Println(Self().String()); return 0 },
	})
	os.Exit(m.Run())
}

const boot = "0822cc11-97b4-4fb4-bf9b-7891202df541"

func TestParseOwner(t *testing.T) {
	tests := []struct {
		in      string
		want    Owner
		wantErr bool
	}{
		{in: "vm/" + boot + "/4026531836/123/456", want: Owner{Host: "vm", Boot: boot, PIDNS: 4026531836, PID: 123, Start: 456}},
		{in: "older/123/456", want: Owner{Host: "older", PID: 123, Start: 456}},
		{in: "host/with/slashes/7/8", want: Owner{Host: "host/with/slashes", PID: 7, Start: 8}},
		{in: "a/b/" + boot + "/9/7/8", want: Owner{Host: "a/b", Boot: boot, PIDNS: 9, PID: 7, Start: 8}},
		{in: "vm/not-a-boot-id/4026531836/123/456", want: Owner{Host: "vm/not-a-boot-id/4026531836", PID: 123, Start: 456}},
		{in: "", wantErr: true},
		{in: "vm/123", wantErr: true},
		{in: "vm/x/1", wantErr: true},
		{in: "vm/0/1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseOwner(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseOwner(%q) err = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("ParseOwner(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
	me := Self()
	if me.PID != os.Getpid() || me.Start == 0 || me.Boot == "" || me.PIDNS == 0 {
		t.Errorf("Self() = %+v: want this PID, a start time, a boot id and a PID namespace", me)
	}
	if back, err := ParseOwner(me.String()); err != nil || back != me {
		t.Errorf("round trip of %v: %+v, %v", me, back, err)
	}
}

// TestLiveness: only what can be proven is Gone. A PID means something
// only in its own PID namespace of one boot; the hostname alone proves
// nothing, since containers and CI runners sharing one engine often share
// one.
func TestLiveness(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	start, err := startTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	me := Self()
	child := Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: cmd.Process.Pid, Start: start}
	otherBoot := "ffffffff-97b4-4fb4-bf9b-7891202df541"
	with := func(f func(*Owner)) Owner { o := child; f(&o); return o }
	tests := []struct {
		name  string
		owner Owner
		want  Liveness
		why   string // a word the reason must hold
	}{
		{"a running process", child, Alive, "runs"},
		{"a PID now used by a later process", with(func(o *Owner) { o.Start++ }), Gone, "later process"},
		{"another PID namespace on this machine, same hostname", with(func(o *Owner) { o.PIDNS++ }), Unknown, "PID namespace"},
		{"another PID namespace whose PID is free here", with(func(o *Owner) { o.PIDNS++; o.PID = 1 << 30 }), Unknown, "PID namespace"},
		{"this host after a reboot", with(func(o *Owner) { o.Boot = otherBoot }), Gone, "rebooted"},
		{"another machine", with(func(o *Owner) { o.Boot = otherBoot; o.Host = me.Host + "-elsewhere" }), Unknown, "not on this machine"},
		{"an older owner without boot id, PID free", Owner{Host: me.Host, PID: 1 << 30, Start: 1}, Unknown, "older"},
		{"no start time to tell a reused PID", with(func(o *Owner) { o.Start = 0 }), Unknown, "start time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := tt.owner.Liveness()
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("Liveness(%v) = %v (%s), want %v (%q)", tt.owner, got, why, tt.want, tt.why)
			}
			if tt.owner.Gone() != (tt.want == Gone) {
				t.Errorf("Gone() = %v, want %v", tt.owner.Gone(), tt.want == Gone)
			}
		})
	}
	cmd.Process.Kill()
	cmd.Wait()
	if l, why := child.Liveness(); l != Gone {
		t.Errorf("a killed and reaped child is %v (%s), want gone", l, why)
	}
}

// TestAnOwnerInAnotherPIDNamespaceIsNotGone runs a real process in a PID
// namespace of its own (unshare, as a container would) and checks that
// its identity, PID 1 over there, never reads as gone here, where PID 1 is
// another process with another start time.
func TestAnOwnerInAnotherPIDNamespaceIsNotGone(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare (util-linux) to make a PID namespace")
	}
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), reexec.Env+"=print-owner")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("unshare: %v: %s", err, stderr.String())
	}
	o, err := ParseOwner(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if o.PID != 1 || o.PIDNS == Self().PIDNS || o.Boot != Self().Boot {
		t.Fatalf("helper identity %+v: want PID 1 in another namespace of this boot (this process: %+v)", o, Self())
	}
	if l, why := o.Liveness(); l != Unknown || !strings.Contains(why, "another PID namespace") {
		t.Errorf("an owner in another PID namespace is %v (%s), want unknown", l, why)
	}
	// What the older hostname+PID rule concluded for the same identity.
	legacy := Owner{Host: o.Host, PID: o.PID, Start: o.Start}
	if start, err := startTime(1); err == nil && start != o.Start {
		t.Logf("the older rule would have called it gone: PID 1 here started at %d, the owner at %d (%v)", start, o.Start, legacy)
	}
}

func TestSelectors(t *testing.T) {
	me := Self()
	dead := Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}.String()
	foreignNS := Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS + 1, PID: 1 << 30, Start: 1}.String()
	rebooted := Owner{Host: me.Host, Boot: "ffffffff-97b4-4fb4-bf9b-7891202df541", PIDNS: me.PIDNS, PID: os.Getpid(), Start: me.Start}.String()
	dir := t.TempDir()
	record := filepath.Join(dir, "warm-layer.json")
	if err := os.WriteFile(record, []byte(`{"schema":"contested/warm-layer@1","run_id":"w1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.json")
	tests := []struct {
		name     string
		sel      Selector
		labels   map[string]string
		want     bool
		wantKept string
	}{
		{"orphan of a dead owner", Orphaned(""), map[string]string{LabelOwner: dead, LabelRole: "layer-postgres"}, true, ""},
		{"live owner is never orphaned", Orphaned(""), map[string]string{LabelOwner: me.String()}, false, ""},
		{"owner in another PID namespace is kept, saying why", Orphaned(""), map[string]string{LabelOwner: foreignNS}, false, "another PID namespace"},
		{"owner of an earlier boot of this host is orphaned", Orphaned(""), map[string]string{LabelOwner: rebooted}, true, ""},
		{"older owner label is kept, saying why", Orphaned(""), map[string]string{LabelOwner: me.Host + "/1073741824/1"}, false, "older"},
		{"kept resources are reaped once their owner is gone", Orphaned(""), map[string]string{LabelOwner: dead, LabelKeep: "true"}, true, ""},
		{"warm layer its record holds is kept after its creator exits", Orphaned(""), map[string]string{LabelOwner: dead, LabelRun: "w1", LabelWarm: record}, false, ""},
		{"warm layer whose record names another run is orphaned", Orphaned(""), map[string]string{LabelOwner: dead, LabelRun: "w0", LabelWarm: record}, true, ""},
		{"warm layer without a record is orphaned", Orphaned(""), map[string]string{LabelOwner: dead, LabelRun: "w1", LabelWarm: missing}, true, ""},
		{"warm layer of a live creator is kept without a record", Orphaned(""), map[string]string{LabelOwner: me.String(), LabelRun: "w1", LabelWarm: missing}, false, ""},
		{"role prefix narrows", Orphaned("cluster-"), map[string]string{LabelOwner: dead, LabelRole: "layer-postgres"}, false, ""},
		{"unreadable owner is kept, saying why", Orphaned(""), map[string]string{LabelOwner: "garbage"}, false, "does not parse"},
		{"run selects its own", Run("r1"), map[string]string{LabelRun: "r1"}, true, ""},
		{"run leaves others", Run("r1"), map[string]string{LabelRun: "r2"}, false, ""},
		{"mine: this run and this process", Mine("r1"), map[string]string{LabelRun: "r1", LabelOwner: me.String()}, true, ""},
		{"mine: same run id, another process", Mine("r1"), map[string]string{LabelRun: "r1", LabelOwner: dead}, false, ""},
		{"mine: this process, another run", Mine("r1"), map[string]string{LabelRun: "r2", LabelOwner: me.String()}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, kept := tt.sel(tt.labels)
			if got != tt.want {
				t.Errorf("selector = %v, want %v", got, tt.want)
			}
			if (tt.wantKept == "") != (kept == "") || !strings.Contains(kept, tt.wantKept) {
				t.Errorf("kept reason = %q, want one holding %q", kept, tt.wantKept)
			}
		})
	}
}

// TestSweepLeavesUnprovableOwnersAloneAndSaysSo runs the sweep against a
// real engine: of three labelled networks, the one whose owner is provably
// gone is removed; the one owned from another PID namespace and the one
// owned before this host's last boot are told apart (kept with a reason,
// removed).
func TestSweepLeavesUnprovableOwnersAloneAndSaysSo(t *testing.T) {
	cli := requireDocker(t)
	me := Self()
	run := fmt.Sprintf("reap-test-%d", os.Getpid())
	owners := map[string]string{
		"dead":     Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}.String(),
		"foreign":  Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS + 1, PID: 1 << 30, Start: 1}.String(),
		"rebooted": Owner{Host: me.Host, Boot: "ffffffff-97b4-4fb4-bf9b-7891202df541", PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}.String(),
	}
	ctx := context.Background()
	for name, owner := range owners {
		labels := Labels(run, "test-network")
		labels[LabelOwner] = owner
		createNetwork(t, cli, "contested-"+run+"-"+name, labels)
	}
	var log bytes.Buffer
	swept, err := Sweep(ctx, cli, onlyRun(run, Orphaned("")), &log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"contested-" + run + "-dead", "contested-" + run + "-rebooted"}
	if fmt.Sprint(swept.Networks) != fmt.Sprint(want) {
		t.Errorf("swept %v, want %v\n%s", swept.Networks, want, log.String())
	}
	if fmt.Sprint(swept.Kept) != fmt.Sprint([]string{"contested-" + run + "-foreign"}) || !strings.Contains(log.String(), "left network contested-"+run+"-foreign alone") || !strings.Contains(log.String(), "another PID namespace") {
		t.Errorf("kept %v; the sweep must say it left the foreign owner's network alone and why:\n%s", swept.Kept, log.String())
	}
	left, err := Leftovers(ctx, cli, Run(run))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(left.Networks) != fmt.Sprint([]string{"contested-" + run + "-foreign"}) {
		t.Errorf("left %v, want only the foreign owner's network", left.Networks)
	}
}

// onlyRun narrows a selector to one run, so a test never touches another
// run's resources.
func onlyRun(run string, sel Selector) Selector {
	return func(labels map[string]string) (bool, string) {
		if labels[LabelRun] != run {
			return false, ""
		}
		return sel(labels)
	}
}
