package degraded

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/faultlayer/levers"
)

// The flows of the matrix.
const (
	FlowLoad   = "load"   // load the page while the condition holds
	FlowSubmit = "submit" // submit a transfer from a healthy page while it holds
	FlowReload = "reload" // submit while it holds, then reload (re-post) once it healed
)

// Flows are the matrix's flows, in the order they run.
var Flows = []string{FlowLoad, FlowSubmit, FlowReload}

// Condition is one standing fault of the matrix and the lever it is
// recorded as.
type Condition struct {
	Name    string
	Lever   string
	Meaning string
	// Banners are the banner states a page loaded under it may show.
	Banners []string
}

// Conditions are the matrix's conditions, in the order they run.
var Conditions = []Condition{
	{Name: "backend-down", Lever: levers.NameDisconnect, Meaning: "the proxy is disabled: connections refused, live ones dropped", Banners: []string{"unreachable"}},
	{Name: "latency", Lever: levers.NameConfirmTimeout, Meaning: "answers from the database are delayed by 1.5 to 2.5 times the page's timeout, as the seed's plan says: the write commits, its answer comes too late", Banners: []string{"slow"}},
	{Name: "reset", Lever: levers.NameReset, Meaning: "connections are reset as the database answers (mid-submit)", Banners: []string{"unreachable", "slow"}},
	{Name: "pool-exhausted", Lever: levers.NamePoolExhaustion, Meaning: "the front's connections are dropped and the database is held at its connection limit", Banners: []string{"unreachable", "slow"}},
}

// Cell is one flow under one condition: "submit/latency".
type Cell struct {
	Flow      string
	Condition Condition
}

// ID is the cell's name, flow/condition.
func (c Cell) ID() string { return c.Flow + "/" + c.Condition.Name }

// ErrNoCells reports cell patterns that select no cell.
var ErrNoCells = errors.New("no cell matches")

// Matrix is every cell, flows × conditions, in matrix order.
func Matrix() []Cell {
	var all []Cell
	for _, f := range Flows {
		for _, c := range Conditions {
			all = append(all, Cell{Flow: f, Condition: c})
		}
	}
	return all
}

// Select returns the cells the patterns select (path.Match on flow/condition;
// none selects all), in matrix order.
func Select(patterns []string) ([]Cell, error) {
	all := Matrix()
	if len(patterns) == 0 {
		return all, nil
	}
	var out []Cell
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%w: bad pattern %q: %v", ErrNoCells, p, err)
		}
		hit := false
		for _, c := range all {
			if ok, _ := path.Match(p, c.ID()); ok {
				hit = true
				if !slices.ContainsFunc(out, func(o Cell) bool { return o.ID() == c.ID() }) {
					out = append(out, c)
				}
			}
		}
		if !hit {
			return nil, fmt.Errorf("%w %q; cells are flow/condition with flows %s and conditions %s, e.g. submit/latency or 'reload/*'", ErrNoCells, p, strings.Join(Flows, ", "), strings.Join(conditionNames(), ", "))
		}
	}
	slices.SortStableFunc(out, func(a, b Cell) int { return index(all, a) - index(all, b) })
	return out, nil
}

func index(all []Cell, c Cell) int {
	return slices.IndexFunc(all, func(o Cell) bool { return o.ID() == c.ID() })
}

func conditionNames() []string {
	var out []string
	for _, c := range Conditions {
		out = append(out, c.Name)
	}
	return out
}

// armed is one condition in place, with the injector's evidence.
type armed struct {
	in   bool   // the injector read the fault back in place
	what string // what it read back
	heal func(ctx context.Context) error
}

// target is what a condition acts on.
type target struct {
	tp        *toxiproxy.Client
	proxy     *toxiproxy.Proxy
	armer     *levers.PgFaultArmer
	directDSN string
	admin     *pgxpool.Pool
	database  string
	appName   string // the front's application_name: its backends
	timeout   time.Duration
	latency   time.Duration // what the latency condition holds: the plan's, per cell
}

// arm puts the condition in place and reads it back.
func (t *target) arm(ctx context.Context, c Condition) (*armed, error) {
	switch c.Name {
	case "backend-down":
		a := &armed{heal: func(context.Context) error { return t.proxy.Enable() }}
		if err := t.proxy.Disable(); err != nil {
			return a, fmt.Errorf("disable proxy %s: %w", t.proxy.Name, err)
		}
		back, err := t.tp.Proxy(t.proxy.Name)
		if err != nil {
			return a, fmt.Errorf("read proxy %s back: %w", t.proxy.Name, err)
		}
		a.in = !back.Enabled
		a.what = fmt.Sprintf("proxy %s read back enabled=%v (listen %s)", back.Name, back.Enabled, back.Listen)
		return a, nil
	case "latency":
		ms := t.latency.Milliseconds()
		return t.toxic(ctx, "degraded-latency", "latency", toxiproxy.Attributes{"latency": ms})
	case "reset":
		return t.toxic(ctx, "degraded-reset", "reset_peer", toxiproxy.Attributes{"timeout": 0})
	case "pool-exhausted":
		return t.exhaust(ctx)
	}
	return nil, fmt.Errorf("unknown condition %q", c.Name)
}

// toxic adds one downstream toxic of toxicity 1 and reads it back.
func (t *target) toxic(_ context.Context, name, typ string, attrs toxiproxy.Attributes) (*armed, error) {
	a := &armed{heal: func(context.Context) error { return t.proxy.RemoveToxic(name) }}
	if _, err := t.proxy.AddToxic(name, typ, "downstream", 1, attrs); err != nil {
		return a, fmt.Errorf("add toxic %s to %s: %w", name, t.proxy.Name, err)
	}
	back, err := t.proxy.Toxics()
	if err != nil {
		return a, fmt.Errorf("read the toxics of %s back: %w", t.proxy.Name, err)
	}
	for _, x := range back {
		if x.Name == name && x.Type == typ && x.Stream == "downstream" && x.Toxicity == 1 {
			a.in = true
			a.what = fmt.Sprintf("proxy %s read back toxic %s %s downstream toxicity 1 %v", t.proxy.Name, x.Name, x.Type, x.Attributes)
		}
	}
	if !a.in {
		a.what = fmt.Sprintf("proxy %s: toxic %s not read back (%d toxics)", t.proxy.Name, name, len(back))
	}
	return a, nil
}

// exhaust drops the front's connections (the proxy disabled until the
// database shows none of them), then holds the database at its connection
// limit (PgFaultArmer.Exhaust) and enables the proxy again: every
// connection the front opens now is refused with SQLSTATE 53300.
func (t *target) exhaust(ctx context.Context) (*armed, error) {
	var e *levers.Exhaustion
	a := &armed{heal: func(ctx context.Context) error {
		var errs []error
		if e != nil {
			errs = append(errs, e.Release(ctx))
		}
		errs = append(errs, t.proxy.Enable())
		return errors.Join(errs...)
	}}
	if err := t.proxy.Disable(); err != nil {
		return a, fmt.Errorf("disable proxy %s: %w", t.proxy.Name, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := t.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2`, t.database, t.appName).Scan(&n); err != nil {
			return a, fmt.Errorf("count the front's backends: %w", err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return a, fmt.Errorf("the front's %d backends outlived its dropped connections for 5s", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var err error
	if e, err = t.armer.Exhaust(ctx, t.directDSN, 1); err != nil {
		return a, fmt.Errorf("exhaust the front's database: %w", err)
	}
	if err := t.proxy.Enable(); err != nil {
		return a, fmt.Errorf("enable proxy %s: %w", t.proxy.Name, err)
	}
	a.in = e.Full()
	a.what = fmt.Sprintf("%s; proxy %s re-enabled after the front's backends were gone", e, t.proxy.Name)
	return a, nil
}
