package levers

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
)

// NameBurst is Burst's name.
const NameBurst = "burst"

// Burst floods a consumer with a seeded permutation of duplicate, shuffled
// and out-of-order deliveries. Arm plans the burst of Target.Burst and
// returns it as a Delivering fault; the injector side proves the plan
// perturbs something, the victim side is a perturbed delivery consumed.
// Its schedule draws each burst's plan: the permutation's seed, the
// duplicate rate and the reordering window, heavier at higher levels. A
// burst is armed when the test asks for its deliveries, never on a step.
var Burst Lever = burst{spec{
	name:    NameBurst,
	meaning: "a seeded flood of duplicate, shuffled and out-of-order deliveries reaches a consumer",
	needs:   NeedPlan,
	doc: Doc{
		Arm:      "`leg.Deliveries`: a seeded order with duplicates and reorderings",
		Injector: "the plan has perturbations",
		Victim:   "`leg.Consumed` of a perturbed delivery",
		Levels: [3]string{
			"is a burst: its own permutation, 20-35% duplicates, reordered within 4-8",
			"are heavier: 40-60% duplicates within 8-16",
			"is a flood: 60-80% duplicates within 16-32",
		},
	},
}}

type burst struct{ spec }

// BurstParams are one burst's parameters: the seed of its permutation and
// its plan.
type BurstParams struct {
	Seed int64
	Plan BurstPlan
}

func (p BurstParams) String() string {
	return fmt.Sprintf("permutation %d, %.0f%% duplicates, window %d", p.Seed, p.Plan.DuplicateRate*100, p.Plan.Window)
}

// Traits: how heavy the burst is.
func (p BurstParams) Traits() []string {
	switch {
	case p.Plan.DuplicateRate >= 0.6:
		return []string{"flood"}
	case p.Plan.DuplicateRate >= 0.4:
		return []string{"heavy"}
	}
	return []string{"light"}
}

// Draw: two bursts with 20-35% duplicates within a window of 4-8; level 2
// adds two with 40-60% within 8-16; level 3 a flood after each, 60-80%
// within 16-32.
func (burst) Draw(s Streams, p Scope) []Window {
	return drawWindows(s, p, func(r *rand.Rand, k Kind) Params {
		lo, hi, w := 0.20, 0.35, 4
		switch k {
		case More:
			lo, hi, w = 0.40, 0.60, 8
		case Recovery:
			lo, hi, w = 0.60, 0.80, 16
		}
		return BurstParams{Seed: 1 + r.Int64N(1<<53-1), Plan: BurstPlan{DuplicateRate: lo + (hi-lo)*r.Float64(), Window: w + r.IntN(w+1)}}
	})
}

// BurstTarget is the shape of one burst: Messages sent in order,
// perturbed by Plan from Seed. Zero messages arm nothing. A zero Seed or
// plan field takes the window's BurstParams.
type BurstTarget struct {
	Seed     int64
	Messages int
	Plan     BurstPlan
}

// Delivering is an armed burst: the delivery order the consumer processes.
type Delivering interface {
	Fault
	Deliveries() []Delivery
}

func (burst) Arm(_ context.Context, t Target) (Fault, error) {
	b := &burstFault{}
	if t.Burst.Messages == 0 {
		return b, nil
	}
	seed, plan := t.Burst.Seed, t.Burst.Plan
	if p, ok := t.Window.Params.(BurstParams); ok {
		if seed == 0 {
			seed = p.Seed
		}
		if plan.DuplicateRate == 0 {
			plan.DuplicateRate = p.Plan.DuplicateRate
		}
		if plan.Window == 0 {
			plan.Window = p.Plan.Window
		}
	}
	b.deliveries = Plan(seed, t.Burst.Messages, plan)
	dups, re := burstStats(b.deliveries)
	b.perturbed = dups+re > 0
	b.what = fmt.Sprintf("seeded burst (seed %d): %d deliveries of %d messages, %d duplicates, %d out of order", seed, len(b.deliveries), t.Burst.Messages, dups, re)
	return b, nil
}

type burstFault struct {
	deliveries []Delivery
	perturbed  bool
	what       string
}

func (b *burstFault) Injector() (bool, string)   { return b.perturbed, b.what }
func (b *burstFault) Heal(context.Context) error { return nil }
func (b *burstFault) Deliveries() []Delivery     { return b.deliveries }

// DeliveryKind says how a burst perturbed a delivery.
type DeliveryKind int

// Kinds of delivery in a burst.
const (
	// Original is a message's first delivery, in its place.
	Original DeliveryKind = iota
	// Duplicate is a second delivery of a message already delivered.
	Duplicate
	// Reordered is a first delivery that comes before a message that was
	// sent earlier.
	Reordered
)

func (k DeliveryKind) String() string {
	switch k {
	case Duplicate:
		return "duplicate"
	case Reordered:
		return "reordered"
	default:
		return "original"
	}
}

// Delivery is one delivery in a burst: which message (its index in the
// sent order) and how it was perturbed.
type Delivery struct {
	Index int
	Kind  DeliveryKind
}

// BurstPlan shapes a burst. Zero values take the defaults.
type BurstPlan struct {
	DuplicateRate float64 // fraction of messages delivered twice (default 0.3)
	Window        int     // how far a delivery may move from its place (default 8)
}

// Plan returns the seeded delivery order of n messages sent in order
// 0..n-1: every message delivered at least once, some twice, positions
// shuffled within a window. It is a pure function of (seed, n, plan): the
// same seed gives the same burst, another seed a different one.
func Plan(seed int64, n int, p BurstPlan) []Delivery {
	if p.DuplicateRate == 0 {
		p.DuplicateRate = 0.3
	}
	if p.Window == 0 {
		p.Window = 8
	}
	r := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	type slot struct {
		index int
		key   float64
	}
	var slots []slot
	for i := range n {
		// Each delivery sorts by its place plus a seeded jitter inside the
		// window: a local shuffle that keeps the burst roughly in order.
		slots = append(slots, slot{i, float64(i) + r.Float64()*float64(p.Window)})
		if r.Float64() < p.DuplicateRate {
			slots = append(slots, slot{i, float64(i) + r.Float64()*float64(p.Window)*2})
		}
	}
	slices.SortStableFunc(slots, func(a, b slot) int { return cmp.Compare(a.key, b.key) })
	out := make([]Delivery, len(slots))
	seen := make([]bool, n)
	maxSeen := -1
	for i, s := range slots {
		kind := Original
		switch {
		case seen[s.index]:
			kind = Duplicate
		case s.index < maxSeen:
			kind = Reordered
		}
		seen[s.index] = true
		if s.index > maxSeen {
			maxSeen = s.index
		}
		out[i] = Delivery{Index: s.index, Kind: kind}
	}
	return out
}

// burstStats counts a plan's perturbations.
func burstStats(d []Delivery) (dups, reordered int) {
	for _, x := range d {
		switch x.Kind {
		case Duplicate:
			dups++
		case Reordered:
			reordered++
		}
	}
	return
}
