package levers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// NameCrashAndResume is CrashAndResume's name.
const NameCrashAndResume = "crash-and-resume"

// CrashAndResume kills Target.Process with SIGKILL mid-work; Heal starts
// it again. Its exit status is the injector side's proof that it died
// mid-work; the victim side's proof that it resumed (the restarted worker
// made progress: contested's Worker notes it) is the leg's. On a Cluster it kills replica
// Target.Replica instead, and its fault is Judged like MassRestart's.
var CrashAndResume Lever = crashAndResume{spec{
	name:    NameCrashAndResume,
	meaning: "a worker is killed with SIGKILL mid-work and restarted to finish the rest",
	needs:   NeedProcess,
	doc: Doc{
		Arm:      "SIGKILL the worker from `leg.StartWorker`; `Heal` restarts it",
		Injector: "exit status: killed by SIGKILL",
		Victim:   "the restarted worker's first progress (`Worker.Run`; or `leg.Note` that it resumed)",
		Levels: [3]string{
			"kills the worker (SIGKILL) at a seeded point of progress and restarts it 0-150ms later",
			"kill it again",
			"kills the restarted worker before it has recovered",
		},
	},
}}

type crashAndResume struct{ spec }

// CrashParams are one crash's parameters: which of n workers or replicas
// it kills (Victim), and how long the victim stays dead before Heal
// restarts it (the window's For).
type CrashParams struct {
	Pick    float64 // in [0, 1): the victim among n is Victim(n)
	Restart time.Duration
}

// Victim is the index of the worker or replica the crash kills among n.
func (p CrashParams) Victim(n int) int { return min(int(p.Pick*float64(n)), max(n-1, 0)) }

func (p CrashParams) String() string {
	return fmt.Sprintf("victim pick %.2f, restart after %v", p.Pick, p.Restart)
}

// Traits: none; a crash's variety is its timing.
func (CrashParams) Traits() []string { return nil }

// Draw: a kill at each window, the victim restarted 0-150ms later (the
// window heals by time alone: a dead worker does no steps); level 3's
// kills land right after a restart, while the victim recovers.
func (crashAndResume) Draw(s Streams, p Scope) []Window {
	ws := drawWindows(s, p, func(r *rand.Rand, k Kind) Params {
		return CrashParams{Pick: r.Float64(), Restart: between(r, 0, 150) * time.Millisecond}
	})
	for i := range ws {
		ws[i].Hold, ws[i].For = 0, ws[i].Params.(CrashParams).Restart
	}
	return ws
}

// Process is what crash-and-resume kills mid-work and restarts: a leg's
// worker, or one replica of a cluster (Replica).
type Process interface {
	// Kill sends SIGKILL, waits for the process to die of it and returns
	// its exit status; an error when it was not running or died otherwise.
	Kill(ctx context.Context) (string, error)
	// Start starts it again.
	Start(ctx context.Context) error
}

func (c crashAndResume) Arm(ctx context.Context, t Target) (Fault, error) {
	if t.Cluster != nil {
		if err := t.check(c, NeedCluster); err != nil {
			return nil, err
		}
		return killReplicas(ctx, t.Cluster, t, []int{t.Replica})
	}
	if err := t.check(c, c.needs); err != nil {
		return nil, err
	}
	f := &processFault{p: t.Process}
	status, err := t.Process.Kill(ctx)
	if err != nil {
		return f, err
	}
	f.what = "worker killed mid-work: " + status
	return f, nil
}

type processFault struct {
	p    Process
	what string
}

func (f *processFault) Injector() (bool, string)       { return f.what != "", f.what }
func (f *processFault) Heal(ctx context.Context) error { return f.p.Start(ctx) }
