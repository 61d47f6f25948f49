package levers

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestTheSetInItsOrder: the levers the registry has always listed keep
// their order (a new lever may sit anywhere among them), every contract
// lever comes before every cluster lever, and each is complete.
func TestTheSetInItsOrder(t *testing.T) {
	known := []string{"disconnect", "reset", "confirm-timeout", "burst", "pool-exhaustion", "crash-and-resume", "mass-restart", "partition"}
	names := Names()
	if got := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !slices.Contains(known, n) }); !slices.Equal(got, known) {
		t.Fatalf("Names() = %v: the known levers are missing or out of order, want %v among them", names, known)
	}
	cluster := false
	for _, l := range All() {
		if cluster && !l.Cluster() {
			t.Errorf("contract lever %s comes after a cluster lever: %v", l.Name(), names)
		}
		cluster = l.Cluster()
		got, ok := Lookup(l.Name())
		if !ok || got.Name() != l.Name() {
			t.Errorf("Lookup(%q) = %v, %v", l.Name(), got, ok)
		}
		if l.Meaning() == "" || l.Needs() == 0 {
			t.Errorf("%s has no meaning or needs nothing", l.Name())
		}
		if l.Cluster() != (l.Needs()&NeedCluster != 0) {
			t.Errorf("%s: Cluster() = %v but needs %b", l.Name(), l.Cluster(), l.Needs())
		}
	}
	if _, ok := Lookup("kill-9"); ok {
		t.Error("Lookup accepted an unknown lever")
	}
	All()[0] = nil
	if All()[0] == nil {
		t.Error("All must return a copy")
	}
}

// TestTheSetIsWellFormed: every lever in the set has a name of its own,
// a meaning and complete docs rows, and the contract levers come before the
// cluster levers, as All promises.
func TestTheSetIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	cluster := false
	for _, l := range All() {
		name := l.Name()
		switch {
		case name == "":
			t.Errorf("a lever (%T) has no name", l)
		case seen[name]:
			t.Errorf("lever %s is in the set twice", name)
		case l.Meaning() == "":
			t.Errorf("lever %s has no meaning", name)
		case slices.Contains([]string{l.Doc().Arm, l.Doc().Injector, l.Doc().Victim, l.Doc().Levels[0], l.Doc().Levels[1], l.Doc().Levels[2]}, ""):
			t.Errorf("lever %s has no complete docs rows: %+v", name, l.Doc())
		case cluster && !l.Cluster():
			t.Errorf("contract lever %s comes after a cluster lever", name)
		}
		seen[name] = true
		cluster = cluster || l.Cluster()
		if got, ok := Lookup(name); !ok || got.Name() != name {
			t.Errorf("Lookup(%q) = %v, %v", name, got, ok)
		}
	}
}

func TestFiredRules(t *testing.T) {
	tests := []struct {
		name  string
		lever Lever
		proof Proof
		want  error
	}{
		{"both sides", Reset, Proof{Injected: true, Victim: 2}, nil},
		{"not in place", Reset, Proof{Victim: 2}, ErrNotInPlace},
		{"unseen", Disconnect, Proof{Injected: true}, ErrUnseen},
		{"unseen burst", Burst, Proof{Injected: true, Confirmed: true}, ErrUnseen},
		{"confirmed ambiguous write", ConfirmTimeout, Proof{Injected: true, Confirmed: true, Victim: 1}, nil},
		{"unconfirmed ambiguous write", ConfirmTimeout, Proof{Injected: true, Victim: 1}, ErrUnconfirmed},
		{"confirm-timeout unseen before unconfirmed", ConfirmTimeout, Proof{Injected: true}, ErrUnseen},
		{"confirm-timeout not in place first", ConfirmTimeout, Proof{Confirmed: true, Victim: 1}, ErrNotInPlace},
		{"cluster landed", MassRestart, Proof{Injected: true, Victim: 1}, nil},
		{"cluster did not land", Partition, Proof{Injected: true}, ErrUnseen},
		{"isolate: both sides, the others worked", Isolate, Proof{Injected: true, Victim: 1, Bystanders: 3}, nil},
		{"isolate: the others did nothing", Isolate, Proof{Injected: true, Victim: 1}, ErrBystandersIdle},
		{"isolate: the struck client saw nothing", Isolate, Proof{Injected: true, Bystanders: 3}, ErrUnseen},
		{"isolate: not in place", Isolate, Proof{Victim: 1, Bystanders: 3}, ErrNotInPlace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.lever.Fired(tt.proof); !errors.Is(got, tt.want) || (tt.want == nil) != (got == nil) {
				t.Errorf("%s.Fired(%+v) = %v, want %v", tt.lever.Name(), tt.proof, got, tt.want)
			}
		})
	}
}

// TestArmRefusesATargetWithoutItsParts: a lever given nothing to act on
// says what it needs and changes nothing; a burst with no messages arms
// nothing the injector could prove.
func TestArmRefusesATargetWithoutItsParts(t *testing.T) {
	for _, l := range All() {
		t.Run(l.Name(), func(t *testing.T) {
			f, err := l.Arm(context.Background(), Target{})
			if l.Name() == NameBurst {
				if in, what := f.Injector(); err != nil || in || what != "" {
					t.Errorf("an empty burst: %v, injector %v %q", err, in, what)
				}
				return
			}
			if !errors.Is(err, ErrNoTarget) || f != nil {
				t.Errorf("Arm(empty target) = %v, %v; want no fault and ErrNoTarget", f, err)
			}
		})
	}
}
