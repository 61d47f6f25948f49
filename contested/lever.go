package contested

import (
	"fmt"

	"github.com/contested/contested/internal/faultlayer/levers"
)

// Lever is one kind of fault, by its name in a surface's legs. What it
// does (arm, heal, the proof from both sides) is the value of that name in
// package internal/faultlayer/levers.
type Lever string

// The contract levers.
const (
	// Disconnect disables the proxy: new connections are refused and live
	// ones are dropped.
	Disconnect Lever = levers.NameDisconnect
	// Reset resets connections that carry traffic (Toxiproxy reset_peer).
	Reset Lever = levers.NameReset
	// ConfirmTimeout lets a write reach the server and commit but drops the
	// server's reply, so the client times out on a write that happened: an
	// ambiguous outcome.
	ConfirmTimeout Lever = levers.NameConfirmTimeout
	// Burst floods a consumer with a seeded permutation of duplicate,
	// shuffled and out-of-order deliveries.
	Burst Lever = levers.NameBurst
	// PoolExhaustion has PgFaultArmer set the victim database's
	// connection limit to the backends it has, so the victim's pool cannot
	// grow.
	PoolExhaustion Lever = levers.NamePoolExhaustion
	// CrashAndResume kills a worker process with SIGKILL mid-work and
	// restarts it.
	CrashAndResume Lever = levers.NameCrashAndResume
	// Isolate cuts one client, picked by the seed, off from Postgres for a
	// time the seed draws while the others keep working: start its leg
	// with Clients(n) and reach Postgres as each client through Client(i).
	Isolate Lever = levers.NameIsolate
	// Latency delays every answer through the proxy (a Toxiproxy latency
	// toxic): the victim's operations slow down without failing.
	Latency Lever = levers.NameLatency
)

// value is the lever's value in the fault set. A lever that is not in the
// set, or that only the cluster rig can arm, is an error.
func (l Lever) value() (levers.Lever, error) {
	v, ok := levers.Lookup(string(l))
	if !ok {
		return nil, fmt.Errorf("unknown lever %q (known: %v)", string(l), levers.Names())
	}
	if v.Cluster() {
		return nil, fmt.Errorf("lever %q needs the cluster rig (go tool mage cluster-tests); a leg in a Go test cannot arm it", string(l))
	}
	return v, nil
}

// Signal is a class of error a victim can see when a fault lands; ""
// when no fault explains an error.
type Signal string

// Signals the observer recognizes.
const (
	SigReset      = Signal(levers.SigReset)
	SigRefused    = Signal(levers.SigRefused)
	SigEOF        = Signal(levers.SigEOF)
	SigBrokenPipe = Signal(levers.SigBrokenPipe)
	SigTimeout    = Signal(levers.SigTimeout)
	SigTooMany    = Signal(levers.SigTooMany)
	SigAdminStop  = Signal(levers.SigAdminStop)
	SigConnClosed = Signal(levers.SigConnClosed)
)

// Classify names the fault signal an error carries, or "" when it carries
// none.
func Classify(err error) Signal { return Signal(levers.Classify(err)) }

// ErrCanonicalDB: a database fault was refused because the harness did
// not create the database, or because the registry names it canonical.
var ErrCanonicalDB = levers.ErrCanonicalDB

// BurstPlan shapes a burst; its zero fields take the schedule's window's.
type BurstPlan struct {
	// DuplicateRate is the fraction of messages delivered twice (default
	// 0.3).
	DuplicateRate float64
	// Window is how far a delivery may move from its place (default 8).
	Window int
}

func (p BurstPlan) levers() levers.BurstPlan {
	return levers.BurstPlan{DuplicateRate: p.DuplicateRate, Window: p.Window}
}

// DeliveryKind says how a burst perturbed a delivery.
type DeliveryKind int

// Kinds of delivery in a burst.
const (
	Original  = DeliveryKind(levers.Original)
	Duplicate = DeliveryKind(levers.Duplicate)
	Reordered = DeliveryKind(levers.Reordered)
)

// String names the kind: "original", "duplicate" or "reordered".
func (k DeliveryKind) String() string { return levers.DeliveryKind(k).String() }

// Delivery is one delivery in a burst: the message's index in the
// original order, and how the burst perturbed it.
type Delivery struct {
	Index int          // the message's place in the original order
	Kind  DeliveryKind // how the burst perturbed this delivery of it
}

func deliveries(ds []levers.Delivery) []Delivery {
	out := make([]Delivery, len(ds))
	for i, d := range ds {
		out[i] = Delivery{Index: d.Index, Kind: DeliveryKind(d.Kind)}
	}
	return out
}

// Plan returns the seeded delivery order of n messages: every message at
// least once, some twice, some moved, all drawn from the seed.
func Plan(seed int64, n int, p BurstPlan) []Delivery {
	return deliveries(levers.Plan(seed, n, p.levers()))
}
