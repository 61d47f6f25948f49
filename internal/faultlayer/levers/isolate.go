package levers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// NameIsolate is Isolate's name.
const NameIsolate = "isolate"

// Isolate cuts one client off from Postgres while the others keep working:
// a leg whose clients each have a proxy of their own (Target.Clients)
// disables the proxy of the client its schedule picks, for the time its
// schedule draws, and Heal enables it again. It is the fault that makes a
// lock's holder lose its lease while the others go on, the split brain no
// fault on a shared path can make. The injector side reads every client's
// proxy back (the struck ones disabled, the others enabled); the victim
// side is the struck client's own errors, and the fault fires only when
// the clients it spared did work meanwhile (Proof.Bystanders).
//
// Its schedule: each level-1 window cuts one client off for 1.5-4 s, long
// enough for a lease of a second or so to expire and another client to take
// it; level 2 adds windows that cut two clients off at once (one when there
// are only two); level 3 adds, after each, a 0.3-1 s window armed only
// while a client it spares is in the middle of an operation it marked (an
// acquire), so the cut lands while another client contends.
var Isolate Lever = isolate{spec{
	name:    NameIsolate,
	meaning: "one client, picked by the seed, is cut off from the database while the others keep working",
	needs:   NeedClients,
	signals: []Signal{SigRefused, SigReset, SigEOF, SigBrokenPipe, SigConnClosed},
	doc: Doc{
		Arm:      "disable the struck client's own proxy (`contested.Clients(n)`, n ≥ 2)",
		Injector: "every client's proxy read back: the struck ones disabled, the others enabled",
		Victim:   "the struck client's own errors (refused, reset, EOF), **and** work by the clients it spared meanwhile (their reads and answered ops)",
		Levels: [3]string{
			"cuts the client a seeded pick names off (its own proxy disabled) for 1.5-4 s, held by time alone, while the others go on",
			"cut two clients off at once (one when the leg has two)",
			"cuts one off again for 0.3-1 s, armed only while a client it spares is inside `Client.Begin` (mid-acquire)",
		},
	},
}}

type isolate struct{ spec }

// IsolateParams are one isolation's parameters: which clients it cuts off
// (each pick in [0, 1) chooses one among those left) and whether it waits
// for a spared client to be busy.
type IsolateParams struct {
	Picks     []float64
	WhileBusy bool
}

var _ Striking = IsolateParams{}

// Victims are the clients, among n, the isolation cuts off: one per pick,
// distinct, and never all n.
func (p IsolateParams) Victims(n int) []int {
	left := make([]int, n)
	for i := range left {
		left[i] = i
	}
	var out []int
	for _, pick := range p.Picks {
		if len(left) <= 1 {
			break
		}
		k := min(int(pick*float64(len(left))), len(left)-1)
		out = append(out, left[k])
		left = slices.Delete(left, k, k+1)
	}
	slices.Sort(out)
	return out
}

// AwaitsBusy implements Striking.
func (p IsolateParams) AwaitsBusy() bool { return p.WhileBusy }

func (p IsolateParams) String() string {
	picks := make([]string, len(p.Picks))
	for i, x := range p.Picks {
		picks[i] = fmt.Sprintf("%.2f", x)
	}
	s := "cut off pick " + strings.Join(picks, "+")
	if p.WhileBusy {
		s += " while another client is busy"
	}
	return s
}

// Traits: how many clients it cuts off, and whether it waits for another
// to be busy.
func (p IsolateParams) Traits() []string {
	t := []string{fmt.Sprintf("%d-client", len(p.Picks))}
	if p.WhileBusy {
		t = append(t, "while-busy")
	}
	return t
}

// Draw: windows held by time alone (a client cut off does no steps), one
// client for 1.5-4 s at level 1, two at once at level 2's added windows, a
// 0.3-1 s cut while another client is busy after each at level 3.
func (isolate) Draw(s Streams, p Scope) []Window {
	ws := drawWindows(s, p, func(r *rand.Rand, k Kind) Params {
		params := IsolateParams{Picks: []float64{r.Float64()}}
		switch k {
		case More:
			params.Picks = append(params.Picks, r.Float64())
		case Recovery:
			params.WhileBusy = true
		}
		return params
	})
	for i := range ws {
		r := s.Of(ws[i].Kind)
		ws[i].Hold = 0
		if ws[i].Kind == Recovery {
			ws[i].For = between(r, 300, 1000) * time.Millisecond
		} else {
			ws[i].For = between(r, 1500, 4000) * time.Millisecond
		}
	}
	return ws
}

func (is isolate) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(is, is.needs); err != nil {
		return nil, err
	}
	p, ok := t.Window.Params.(IsolateParams)
	if !ok || len(p.Picks) == 0 {
		p = IsolateParams{Picks: []float64{0}}
	}
	f := &isolateFault{clients: t.Clients, struck: p.Victims(len(t.Clients))}
	for _, i := range f.struck {
		if err := t.Clients[i].Disable(); err != nil {
			return f, fmt.Errorf("cut client %d off: %w", i, err)
		}
	}
	in, what, err := readBack(t.Toxiproxy, t.Clients, f.struck)
	f.in, f.what = in, what
	return f, err
}

// readBack reads every client's proxy back: in when the struck ones are
// disabled and the others enabled.
func readBack(tp *toxiproxy.Client, clients []*toxiproxy.Proxy, struck []int) (bool, string, error) {
	in := true
	var cut, open []string
	for i, c := range clients {
		back, err := tp.Proxy(c.Name)
		if err != nil {
			return false, "", fmt.Errorf("read client %d's proxy back: %w", i, err)
		}
		if slices.Contains(struck, i) {
			in = in && !back.Enabled
			cut = append(cut, fmt.Sprintf("client %d's proxy %s disabled (read back enabled=%v)", i, back.Name, back.Enabled))
		} else {
			in = in && back.Enabled
			open = append(open, fmt.Sprintf("%d (enabled=%v)", i, back.Enabled))
		}
	}
	return in, fmt.Sprintf("%s; the other clients' proxies read back: %s", strings.Join(cut, ", "), strings.Join(open, ", ")), nil
}

// Fired: the struck clients' proxies were read back disabled and the
// others' enabled, a struck client saw the cut, and the clients it spared
// kept working.
func (is isolate) Fired(p Proof) error {
	if err := bothSides(p); err != nil {
		return err
	}
	if p.Bystanders == 0 {
		return ErrBystandersIdle
	}
	return nil
}

type isolateFault struct {
	clients []*toxiproxy.Proxy
	struck  []int
	in      bool
	what    string
}

var _ Scoped = (*isolateFault)(nil)

func (f *isolateFault) Injector() (bool, string) { return f.in, f.what }
func (f *isolateFault) Struck() []int            { return slices.Clone(f.struck) }

func (f *isolateFault) Heal(context.Context) error {
	var errs []error
	for _, i := range f.struck {
		if err := f.clients[i].Enable(); err != nil {
			errs = append(errs, fmt.Errorf("reconnect client %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
