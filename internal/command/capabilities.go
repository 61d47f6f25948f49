package command

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/terminal"
)

// workCapabilities works the machine's capabilities out while the run goes
// on (asking Chromium its version takes a moment), and returns what waits
// for the matrix.
func workCapabilities(ctx context.Context, dir string) func() capability.Matrix {
	done := make(chan capability.Matrix, 1)
	go func() { done <- capability.Work(ctx, dir) }()
	var m capability.Matrix
	var once sync.Once
	return func() capability.Matrix {
		once.Do(func() { m = <-done })
		return m
	}
}

// writeCapabilities prints the capability matrix: every missing capability
// someone needs, with who needs it (each surface with its legs, by name)
// and the command that provides it, then one line of what is present.
func writeCapabilities(out io.Writer, m capability.Matrix, reg *registry.Registry) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%s\n", bold("capabilities"))
	var present []string
	for _, c := range m {
		if c.Present {
			present = append(present, c.Say())
			continue
		}
		if len(c.NeededBy) == 0 {
			continue
		}
		fmt.Fprintf(out, "  %s %s\n      needed by %s\n", color.RedString("MISSING"), terminal.Escape(c.Missing()), neededBy(c.NeededBy, reg))
	}
	fmt.Fprintf(out, "  present: %s\n", strings.Join(present, "; "))
}

// neededBy lists who needs a capability, the first few by name. The legs
// of one surface ("jobs.runner/reset") are one entry, "surface
// jobs.runner (legs reset, disconnect)", whatever their number: a
// surface's legs are what a missing capability stops, so a reader must see
// every one of them, never "and 3 more".
func neededBy(who []string, reg *registry.Registry) string {
	const show = 4
	type entry struct{ who, surface string }
	var entries []entry
	legsOf := map[string][]string{}
	for _, w := range who {
		id, leg, ok := surfaceLeg(w, reg)
		if !ok {
			entries = append(entries, entry{who: w})
			continue
		}
		if _, seen := legsOf[id]; !seen {
			entries = append(entries, entry{surface: id})
		}
		legsOf[id] = append(legsOf[id], leg)
	}
	var says []string
	for _, e := range entries {
		switch legs := legsOf[e.surface]; {
		case e.surface == "":
			says = append(says, e.who)
		case len(legs) == 1:
			says = append(says, fmt.Sprintf("surface %s (leg %s)", e.surface, legs[0]))
		default:
			says = append(says, fmt.Sprintf("surface %s (legs %s)", e.surface, strings.Join(legs, ", ")))
		}
	}
	if len(says) > show {
		return terminal.Escape(fmt.Sprintf("%s and %d more", strings.Join(says[:show], ", "), len(says)-show))
	}
	return terminal.Escape(strings.Join(says, ", "))
}

// surfaceLeg splits "surface/lever" when it names a registered surface and
// one of its legs (a surface id may itself hold a slash).
func surfaceLeg(who string, reg *registry.Registry) (id, leg string, ok bool) {
	i := strings.LastIndex(who, "/")
	if i < 0 || reg == nil {
		return "", "", false
	}
	s, found := reg.Surface(who[:i])
	if !found || !slices.Contains(s.Legs, who[i+1:]) {
		return "", "", false
	}
	return s.ID, who[i+1:], true
}
