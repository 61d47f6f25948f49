package reap

import (
	"os"
	"os/exec"
	"testing"
)

func TestParseOwner(t *testing.T) {
	tests := []struct {
		in      string
		want    Owner
		wantErr bool
	}{
		{in: "vm/123/456", want: Owner{Host: "vm", PID: 123, Start: 456}},
		{in: "host/with/slashes/7/8", want: Owner{Host: "host/with/slashes", PID: 7, Start: 8}},
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
	if o := Self(); o.PID != os.Getpid() || o.Start == 0 {
		t.Errorf("Self() = %+v: want this PID and a start time", o)
	}
	if back, err := ParseOwner(Self().String()); err != nil || back != Self() {
		t.Errorf("round trip of %v: %+v, %v", Self(), back, err)
	}
}

func TestGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := startTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	child := Owner{Host: host, PID: cmd.Process.Pid, Start: start}
	if child.Gone() {
		t.Fatal("a running child reads as gone")
	}
	if reused := (Owner{Host: host, PID: cmd.Process.Pid, Start: start + 1}); !reused.Gone() {
		t.Error("a PID that now belongs to a later process reads as alive")
	}
	if other := (Owner{Host: host + "-elsewhere", PID: 1, Start: 1}); other.Gone() {
		t.Error("an owner on another host reads as gone; this host cannot know")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !child.Gone() {
		t.Error("a killed and reaped child does not read as gone")
	}
}

func TestSelectors(t *testing.T) {
	dead := Owner{Host: Self().Host, PID: 1 << 30, Start: 1}.String()
	tests := []struct {
		name   string
		sel    Selector
		labels map[string]string
		want   bool
	}{
		{"orphan of a dead owner", Orphaned(""), map[string]string{LabelOwner: dead, LabelRole: "layer-postgres"}, true},
		{"live owner is never orphaned", Orphaned(""), map[string]string{LabelOwner: Self().String()}, false},
		{"kept resources are reaped once their owner is gone", Orphaned(""), map[string]string{LabelOwner: dead, LabelKeep: "true"}, true},
		{"role prefix narrows", Orphaned("cluster-"), map[string]string{LabelOwner: dead, LabelRole: "layer-postgres"}, false},
		{"unreadable owner is residue", Orphaned(""), map[string]string{LabelOwner: "garbage"}, true},
		{"run selects its own", Run("r1"), map[string]string{LabelRun: "r1"}, true},
		{"run leaves others", Run("r1"), map[string]string{LabelRun: "r2"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sel(tt.labels); got != tt.want {
				t.Errorf("selector = %v, want %v", got, tt.want)
			}
		})
	}
}
