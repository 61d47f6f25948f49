package degraded

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	seedpkg "github.com/contested/contested/internal/seed"
)

// Plan is what a seed decides of a stage: each cell's transfer amount and
// the latency its latency condition holds. The matrix itself (flows ×
// conditions) is fixed; the seed varies what the faults meet, so that N
// seeds are N schedules and a hardening budget is not N reruns of one.
// One seed gives one plan, whatever cells run.
type Plan struct {
	Seed  int64
	cells map[string]planned
	// Digest and Summary describe the plan of the cells run, for records.
	Digest, Summary string
}

type planned struct {
	amount  int64
	latency time.Duration
	// times is the latency in the front's timeouts: what the seed draws,
	// the same on every machine whatever timeout the front runs with.
	times float64
}

// newPlan draws the plan of cells from seed: amounts distinct per cell (an
// offset drawn once, plus the cell's place in the whole matrix) and a
// latency for each from 1.5 to 2.5 times the front's timeout, always above
// it, so the write commits and its answer comes too late. The seed draws
// the latency in timeouts, so that one seed is one plan (one digest) on a
// machine whose front runs with a longer timeout (frontTimeout) too.
func newPlan(seed int64, cells []Cell, timeout time.Duration) Plan {
	rng := seedpkg.Seed(seed).Rand("degraded")
	p := Plan{Seed: seed, cells: map[string]planned{}}
	base := 10 + rng.Int64N(40)
	var desc []string
	for i, c := range Matrix() {
		times := 1.5 + float64(rng.Int64N(1001))/1000
		lat := time.Duration(times * float64(timeout))
		p.cells[c.ID()] = planned{amount: base + int64(i), latency: lat.Round(time.Millisecond), times: times}
	}
	for _, c := range cells {
		pc := p.cells[c.ID()]
		d := fmt.Sprintf("%s amount %d", c.ID(), pc.amount)
		if c.Condition.Name == "latency" {
			d += fmt.Sprintf(" latency %.3f timeouts", pc.times)
		}
		desc = append(desc, d)
	}
	full := strings.Join(desc, "; ")
	sum := sha256.Sum256([]byte(full))
	p.Digest = hex.EncodeToString(sum[:8])
	p.Summary = full
	if len(p.Summary) > 300 {
		p.Summary = p.Summary[:300] + "…"
	}
	return p
}

// Amount is the transfer amount of cell c.
func (p Plan) Amount(c Cell) int64 { return p.cells[c.ID()].amount }

// Latency is the latency cell c's latency condition holds.
func (p Plan) Latency(c Cell) time.Duration { return p.cells[c.ID()].latency }
