package contested

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

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

// The fault set's parts a test uses, under the names package contested
// has always given them.
type (
	// Signal is a class of error a victim can see when a fault lands.
	Signal = levers.Signal
	// PgFaultArmer injects database faults into victim databases it
	// created itself and refuses every other database.
	PgFaultArmer = levers.PgFaultArmer
	// Victim is a database and a login role created by the harness for
	// one leg.
	Victim = levers.Victim
	// Exhaustion is an armed pool-exhaustion fault.
	Exhaustion = levers.Exhaustion
	// BurstPlan shapes a burst.
	BurstPlan = levers.BurstPlan
	// Delivery is one delivery in a burst.
	Delivery = levers.Delivery
	// DeliveryKind says how a burst perturbed a delivery.
	DeliveryKind = levers.DeliveryKind
)

// Kinds of delivery in a burst.
const (
	Original  = levers.Original
	Duplicate = levers.Duplicate
	Reordered = levers.Reordered
)

// Signals the observer recognizes.
const (
	SigReset      = levers.SigReset
	SigRefused    = levers.SigRefused
	SigEOF        = levers.SigEOF
	SigBrokenPipe = levers.SigBrokenPipe
	SigTimeout    = levers.SigTimeout
	SigTooMany    = levers.SigTooMany
	SigAdminStop  = levers.SigAdminStop
	SigConnClosed = levers.SigConnClosed
)

// Errors of PgFaultArmer.
var (
	// ErrCanonicalDB: the armer refused a database the harness did not
	// create, or a canonical one.
	ErrCanonicalDB = levers.ErrCanonicalDB
	// ErrNotVictim: a Victim the armer did not create.
	ErrNotVictim = levers.ErrNotVictim
)

// NewPgFaultArmer returns an armer over the test-plane admin pool (see
// levers.NewPgFaultArmer).
func NewPgFaultArmer(ctx context.Context, admin *pgxpool.Pool, canonical []string) (*PgFaultArmer, error) {
	return levers.NewPgFaultArmer(ctx, admin, canonical)
}

// Plan returns the seeded delivery order of n messages (see levers.Plan).
func Plan(seed int64, n int, p BurstPlan) []Delivery { return levers.Plan(seed, n, p) }

// Classify names the fault signal an error carries, or "" when it carries
// none (see levers.Classify).
func Classify(err error) Signal { return levers.Classify(err) }
