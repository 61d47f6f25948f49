package cluster

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/contested/contested/faultlayer/levers"
	"github.com/contested/contested/faultrecord"
)

// plan is where one leg's fault lands, drawn from the run's seed: the
// operation of the stream after which it is armed, the replica a
// one-replica lever strikes, and how long it holds. It is a pure function
// of the leg, the seed, the level, the stream's length and the replica
// count, so one seed replays one plan.
type plan struct {
	after   int           // armed once the replicas completed this many operations
	replica int           // the replica a one-replica lever acts on
	hold    time.Duration // how long the fault stays before heal
	// schedule is the lever's schedule the plan takes its first window
	// from; its description and digest go into the leg's record.
	schedule levers.Schedule
}

// planLeg draws l's plan. The arm point is the lever's first window
// (levers.NewSchedule over the stream's n operations), kept between a sixth
// and a third of the stream so the replicas are busy when it lands and two
// thirds of the work remain for those restarted to take up; the hold is the leg's own plus the window's
// time; the replica is the crash's victim pick, or for the other
// one-replica levers a draw of their own. Levels only add windows after the
// first, so the rig's one fault per leg is the same at every level.
func planLeg(l leg, seed int64, level, n, replicas int) plan {
	s := levers.NewSchedule(l.lever, seed, levers.Scope{Level: level, Span: n})
	w := s.Window(0)
	p := plan{after: min(max(w.After, n/6), n/3), hold: l.hold + w.For, schedule: s}
	if l.one {
		if c, ok := w.Params.(levers.CrashParams); ok {
			p.replica = c.Victim(replicas)
		} else {
			h := fnv.New64a()
			h.Write([]byte("cluster/" + l.name))
			p.replica = rand.New(rand.NewPCG(uint64(seed), h.Sum64())).IntN(replicas)
		}
	}
	return p
}

// summary describes the plan for the leg's record.
func (p plan) summary(l leg) string {
	who := "every replica"
	if l.one {
		who = fmt.Sprintf("replica %d", p.replica+1)
	}
	return fmt.Sprintf("%s: %s after %d operations, held %v", l.lever.Name(), who, p.after, p.hold)
}

// record is the plan as the leg's record carries it.
func (p plan) record(l leg) *faultrecord.Schedule {
	sum := p.summary(l)
	return &faultrecord.Schedule{Digest: levers.Digest(sum), Summary: sum, Window: 1, Timing: "schedule"}
}
