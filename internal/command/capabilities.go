package command

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/capability"
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
// someone needs, with who needs it and the command that provides it, then
// one line of what is present.
func writeCapabilities(out io.Writer, m capability.Matrix) {
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
		fmt.Fprintf(out, "  %s %s\n      needed by %s\n", color.RedString("MISSING"), c.Missing(), neededBy(c.NeededBy))
	}
	fmt.Fprintf(out, "  present: %s\n", strings.Join(present, "; "))
}

// neededBy lists who needs a capability, the first few by name.
func neededBy(who []string) string {
	const show = 4
	if len(who) <= show {
		return strings.Join(who, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(who[:show], ", "), len(who)-show)
}
