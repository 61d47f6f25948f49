package contested

import (
	"cmp"
	"fmt"
	"slices"
)

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
	r := newRand(seed)
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

// burstStats summarizes a plan for the injector-side evidence.
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

func describePlan(seed int64, n int, d []Delivery) string {
	dups, re := burstStats(d)
	return fmt.Sprintf("seeded burst (seed %d): %d deliveries of %d messages, %d duplicates, %d out of order", seed, len(d), n, dups, re)
}
