package levers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// Lever is one kind of fault. A value knows its name and meaning, what it
// needs to act on, how to arm it and prove it from the injector side
// (Arm), how to heal it (Fault.Heal), which victim-side signals prove it
// landed (Signals, or Judged for the cluster levers), and the rule that
// says it fired (Fired).
type Lever interface {
	// Name is the lever's name in a surface's legs and in fault records.
	Name() string
	// Meaning is one line: the adverse condition the lever forces.
	Meaning() string
	// Cluster reports whether the lever needs the multi-replica rig
	// rather than a single process behind the fault layer.
	Cluster() bool
	// Needs says which parts of a Target Arm acts on.
	Needs() Need
	// Signals are the victim-side error signals that prove the fault
	// landed; empty for levers the victim proves otherwise (a consumed
	// perturbed delivery, a resumed worker, the work a cluster did).
	Signals() []Signal
	// Arm sets the fault up on t and proves it from the injector side.
	// It returns a fault to heal whenever it may have changed anything,
	// also together with an error.
	Arm(ctx context.Context, t Target) (Fault, error)
	// Fired applies the lever's fired rule to one armed fault's proof:
	// nil when it landed, otherwise an error wrapping ErrNotInPlace,
	// ErrUnseen or ErrUnconfirmed that says what is missing.
	Fired(p Proof) error
	// Doc is the lever's rows in the docs' tables of levers.
	Doc() Doc
	// Draw draws the lever's windows for a scope from the schedule's
	// random sources (NewSchedule seeds them): when each fault is armed,
	// how long it holds and the lever's own parameters for it. Arm reads
	// those back from Target.Window.
	Draw(s Streams, p Scope) []Window
}

// Fault is one armed fault, from Arm to Heal.
type Fault interface {
	// Injector is the injector side's proof taken when the fault was
	// armed: whether it is in place, and what was read back ("" when
	// nothing was).
	Injector() (bool, string)
	// Heal takes the fault away.
	Heal(ctx context.Context) error
}

// Judged is a fault whose victim side is judged from the work the system
// did around it, once it settled after Heal: the faults armed on a
// Cluster.
type Judged interface {
	Fault
	// Victim says whether the victims felt the fault, and what they did.
	Victim(ctx context.Context) (landed bool, what string)
}

// Need is a set of Target parts a lever acts on.
type Need uint8

// Parts of a Target.
const (
	// NeedProxy: Proxy, the Toxiproxy proxy between the victim and
	// Postgres, and Toxiproxy to read it back.
	NeedProxy Need = 1 << iota
	// NeedDatabase: Armer, DSN and Hold, the victim database bypassing
	// the proxy.
	NeedDatabase
	// NeedProcess: Process, a worker to kill mid-work and restart.
	NeedProcess
	// NeedPlan: Burst, the shape of a seeded burst.
	NeedPlan
	// NeedCluster: Cluster, Replica and Pending, the multi-replica rig
	// (and Toxiproxy for partition).
	NeedCluster
	// NeedClients: Clients, each client's own proxy to Postgres (at least
	// two), and Toxiproxy to read them back: a fault that strikes some
	// clients while the others go on.
	NeedClients
)

// Target is what a lever acts on. The caller fills the parts the lever's
// Needs name; a leg of package contested fills the ones it has, the
// cluster rig the cluster ones.
type Target struct {
	// Toxiproxy is the fault layer's Toxiproxy, through which proxies are
	// read back.
	Toxiproxy *toxiproxy.Client
	// Proxy is the proxy between the victim and Postgres.
	Proxy *toxiproxy.Proxy
	// Clients are the proxies of a leg whose clients each have a path of
	// their own to Postgres, in client order.
	Clients []*toxiproxy.Proxy
	// Backends counts the victim database's backends: the injector's view
	// of the victim's connections (nil, or -1, when unknown).
	Backends func(ctx context.Context) int

	// Armer puts the victim database of DSN (direct, not through the
	// proxy) at its connection limit, holding Hold connections of its own
	// (none when 0).
	Armer *PgFaultArmer
	DSN   string
	Hold  int

	// Process is what crash-and-resume kills and restarts.
	Process Process
	// Burst shapes a burst.
	Burst BurstTarget

	// Cluster is the rig; Replica the replica a one-replica lever acts on;
	// Pending the work the rig's producer still had to send when the fault
	// was armed.
	Cluster Cluster
	Replica int
	Pending int

	// Window is the schedule's window being armed: its Params are the
	// lever's own parameters for this fault (nil: the lever's defaults).
	Window Window
}

// backends is Backends, or -1 when there is none.
func (t Target) backends(ctx context.Context) int {
	if t.Backends == nil {
		return -1
	}
	return t.Backends(ctx)
}

// check returns an error wrapping ErrNoTarget when t lacks a part of need.
func (t Target) check(l Lever, need Need) error {
	var missing []string
	if need&NeedProxy != 0 && (t.Proxy == nil || t.Toxiproxy == nil) {
		missing = append(missing, "a proxy")
	}
	if need&NeedDatabase != 0 && (t.Armer == nil || t.DSN == "") {
		missing = append(missing, "a victim database")
	}
	if need&NeedProcess != 0 && t.Process == nil {
		missing = append(missing, "a process")
	}
	if need&NeedCluster != 0 && t.Cluster == nil {
		missing = append(missing, "a cluster")
	}
	if need&NeedClients != 0 && (len(t.Clients) < 2 || t.Toxiproxy == nil) {
		missing = append(missing, "a proxy per client, for at least two clients")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s needs %v", ErrNoTarget, l.Name(), missing)
	}
	return nil
}

// Proof is what both sides proved about one armed fault.
type Proof struct {
	// Injected: the injector side proved the fault in place.
	Injected bool
	// Confirmed: the server-side confirmation a lever asks for beyond
	// that (confirm-timeout's commit of the write the client saw time out).
	Confirmed bool
	// Victim counts the victim-side observations that carry the lever's
	// signature (a Judged fault that landed counts one).
	Victim int
	// Bystanders counts the work the clients a Scoped fault spared did
	// while it was armed (operations answered, reads that carried bytes).
	Bystanders int
}

// Scoped is a fault that strikes some clients of a Target only: the victim
// side counts the errors of those clients alone, and the others' work
// while it is armed (Proof.Bystanders) shows they went on.
type Scoped interface {
	Fault
	// Struck are the indices, in Target.Clients, of the clients it cut off.
	Struck() []int
}

// Slowing is a fault whose victim side is no error but time: it slows the
// victim's traffic down without breaking it, and proves it landed by a
// round trip through its path (a request and the first answer after it)
// that took long enough. A leg times its victim's round trips while one is
// armed and asks it; a lever of this kind needs no Signals.
type Slowing interface {
	Fault
	// Slowed says whether a round trip that took took carries the fault's
	// signature, and names what it saw in words that do not vary from one
	// round trip to the next (they are counted as one kind of evidence).
	Slowed(took time.Duration) (landed bool, what string)
}

// Striking are a window's parameters that name, among n clients, the ones
// its fault will strike: a leg reads them before arming (to wait for
// another client to be busy, to attribute errors).
type Striking interface {
	Params
	Victims(n int) []int
	// AwaitsBusy: arm the window only while a client it does not strike is
	// in the middle of an operation it marked (contested's Client.Begin).
	AwaitsBusy() bool
}

// Sentinel errors.
var (
	// ErrNoTarget: Arm was given a target without a part the lever needs.
	ErrNoTarget = errors.New("the target lacks what the lever acts on")
	// ErrNotInPlace: the fault did not fire because the injector could
	// not prove it in place.
	ErrNotInPlace = errors.New("the injector could not prove it in place")
	// ErrUnseen: the fault did not fire because the victim never saw it.
	ErrUnseen = errors.New("the victim never saw it")
	// ErrUnconfirmed: the fault did not fire because the server-side
	// confirmation the lever asks for is missing.
	ErrUnconfirmed = errors.New("the write was not confirmed committed server-side (call Committed)")
	// ErrBystandersIdle: a fault meant for some clients did not fire as
	// one, because the clients it spared did no work while it was armed.
	ErrBystandersIdle = errors.New("the clients it spared did no work while it was armed")
)

// bothSides is the fired rule of most levers: the injector proved the
// fault in place and the victim saw it.
func bothSides(p Proof) error {
	switch {
	case !p.Injected:
		return ErrNotInPlace
	case p.Victim == 0:
		return ErrUnseen
	}
	return nil
}

// spec is the static half of a lever, embedded by each lever's type.
type spec struct {
	name    string
	meaning string
	cluster bool
	needs   Need
	signals []Signal
	doc     Doc
}

// Doc is a lever's documentation, in Markdown: its rows in the docs'
// tables of levers, which the docs tests (internal/doccheck) hold to it.
// It lives beside the lever so that a new lever brings its own, and no
// docs page lists the levers by hand.
type Doc struct {
	// Arm, Injector and Victim are its row in the table of
	// docs/concepts/levers.md: how it is armed, and what proves from each
	// side that it fired.
	Arm      string
	Injector string
	Victim   string
	// Levels is its row in the levels table of
	// docs/concepts/seeds-and-levels.md: what level 1 (sunny), 2 (stormy)
	// and 3 (radioactive) draw, each cell continuing its column's header.
	Levels [3]string
}

func (s spec) Name() string        { return s.name }
func (s spec) Meaning() string     { return s.meaning }
func (s spec) Cluster() bool       { return s.cluster }
func (s spec) Needs() Need         { return s.needs }
func (s spec) Signals() []Signal   { return slices.Clone(s.signals) }
func (s spec) Doc() Doc            { return s.doc }
func (s spec) Fired(p Proof) error { return bothSides(p) }
func (s spec) String() string      { return s.name }

// Draw is the schedule of a lever without parameters of its own: the
// windows' timing alone.
func (s spec) Draw(st Streams, p Scope) []Window { return drawWindows(st, p, nil) }

// set is every lever, in the order of All: the contract levers, then the
// cluster levers. A new lever is its own file and one entry here; the
// docs' tables of levers are checked against this list and each lever's Doc.
var set = []Lever{
	Disconnect,
	Reset,
	ConfirmTimeout,
	Burst,
	PoolExhaustion,
	CrashAndResume,
	Isolate,
	Latency,
	MassRestart,
	Partition,
}

// All returns every lever, the contract levers first and then the cluster
// levers. The slice is a copy.
func All() []Lever {
	out := make([]Lever, len(set))
	copy(out, set)
	return out
}

// Names returns the levers' names in the order of All.
func Names() []string {
	out := make([]string, len(set))
	for i, l := range set {
		out[i] = l.Name()
	}
	return out
}

// Lookup returns the lever with that name.
func Lookup(name string) (Lever, bool) {
	for _, l := range set {
		if l.Name() == name {
			return l, true
		}
	}
	return nil, false
}
