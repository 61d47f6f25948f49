package cluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultlayer/levers"

	seedpkg "github.com/contested/contested/internal/seed"
)

// plan is where one leg's faults land, drawn from the run's seed: for each
// strike, the operation of the stream after which it is armed, the replica
// a one-replica lever strikes, and how long it holds. It is a pure
// function of the leg, the seed, the level, the stream's length and the
// replica count, so one seed replays one plan.
type plan struct {
	strikes []strike
	// schedule is the lever's schedule the strikes take their windows
	// from.
	schedule levers.Schedule
}

// holds are the operations the stream stops before until a phase of the
// plan healed: phase k is the k-th strike the stream drives (the first, with
// its recovery strike at level 3; the added strike at level 2), and its
// hold lets the struck replicas come back to work still to come, however
// long their restart takes. Each strike the stream drives is armed after
// the hold before it, while the stream runs, so the replicas are busy.
func holds(n, phases int) []int {
	if phases == 1 {
		return []int{n - n/4}
	}
	return []int{n / 2, n - n/4}
}

// phase is the phase strike i belongs to.
func (p plan) phase(i int) int {
	k := 0
	for _, s := range p.strikes[1 : i+1] {
		if s.after >= 0 {
			k++
		}
	}
	return k
}

// phases is how many phases the plan has.
func (p plan) phases() int { return p.phase(len(p.strikes)-1) + 1 }

// strike is one fault of a leg.
type strike struct {
	after   int           // armed once the replicas completed this many operations; -1: as soon as the strike before it healed
	replica int           // the replica a one-replica lever acts on
	hold    time.Duration // how long the fault stays before heal
	kind    levers.Kind   // the level that added it
}

// planLeg draws l's plan. At every level the first strike is the lever's
// first window (levers.NewSchedule over the stream's n operations), armed
// between a sixth and a third of the stream so the replicas are busy when
// it lands, held for the leg's own hold plus the window's time. Level 2
// (stormy) adds a second strike from the schedule's first added window,
// in the stream's third quarter (after the first phase's hold at its
// half), on a replica of its own draw;
// level 3 (radioactive) adds a strike as soon as the first healed, on the
// same replica, while it recovers. The stream waits for each phase to heal
// (holds), so restarted replicas find work.
func planLeg(l leg, seed int64, level, n, replicas int) plan {
	s := levers.NewSchedule(l.lever, seed, levers.Scope{Level: level, Span: n})
	first := s.Window(0)
	p := plan{schedule: s}
	s0 := strike{after: min(max(first.After, n/6), n/3), replica: pick(l, seed, first, 0, replicas), hold: l.hold + first.For}
	p.strikes = append(p.strikes, s0)
	if level >= 3 {
		var rec levers.Window
		for _, w := range s.Windows {
			if w.Kind == levers.Recovery {
				rec = w
				break
			}
		}
		p.strikes = append(p.strikes, strike{after: -1, replica: s0.replica, hold: l.hold + rec.For, kind: levers.Recovery})
	}
	if level >= 2 {
		for i, w := range s.Windows {
			if w.Kind == levers.More {
				h := holds(n, 2)
				after := min(max(w.After, h[0]+n/24), h[1]-n/12)
				p.strikes = append(p.strikes, strike{after: after, replica: pick(l, seed, w, i, replicas), hold: l.hold + w.For, kind: levers.More})
				break
			}
		}
	}
	return p
}

// pick is the replica a one-replica lever strikes in window w (the i-th of
// the schedule): a crash's own victim pick, or for the other levers a draw
// of the rig's from the seed.
func pick(l leg, seed int64, w levers.Window, i, replicas int) int {
	if !l.one {
		return 0
	}
	if c, ok := w.Params.(levers.CrashParams); ok {
		return c.Victim(replicas)
	}
	return seedpkg.Seed(seed).Rand(fmt.Sprintf("%s/cluster/%s/%d", l.lever.Name(), l.name, i)).IntN(replicas)
}

// summary describes the plan: the lever and each strike.
func (p plan) summary(l leg) string {
	parts := make([]string, len(p.strikes))
	for i, s := range p.strikes {
		who := "every replica"
		if l.one {
			who = fmt.Sprintf("replica %d", s.replica+1)
		}
		when := fmt.Sprintf("after %d operations", s.after)
		if s.after < 0 {
			when = "as the strike before healed"
		}
		parts[i] = fmt.Sprintf("#%d %s %s, held %v", i+1, who, when, s.hold)
		if s.kind != levers.Base {
			parts[i] += " (" + s.kind.String() + ")"
		}
	}
	return fmt.Sprintf("%s level %d: %s", l.lever.Name(), p.schedule.Level, strings.Join(parts, "; "))
}

// record is the plan as the record of strike i carries it.
func (p plan) record(l leg, i int) *faultrecord.Schedule {
	sum := p.summary(l)
	return &faultrecord.Schedule{Digest: levers.Digest(sum), Summary: sum, Window: i + 1, Timing: "schedule"}
}
