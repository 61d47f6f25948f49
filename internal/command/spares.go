package command

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/registry"
)

// makeSpares makes spare victim databases on l while the battery's go
// test builds its binaries, one per leg the registry runs at level and
// per self-test, so that the legs take them instead of each waiting for
// a CREATE DATABASE (see levers.PgFaultArmer.MakeSpares). An external
// layer is someone else's server: nothing is made there. The returned
// function stops what is still being made and waits for it; a spare left
// half made is rolled back by the server.
func makeSpares(ctx context.Context, l *faultlayer.Layer, reg *registry.Registry, level int, out io.Writer) (stop func()) {
	if l.Kind == faultlayer.External {
		return func() {}
	}
	n := len(reg.Gate.SelfTests)
	for _, s := range reg.Surfaces {
		n += len(s.LegsAt(level))
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, err := levers.NewPgFaultArmer(ctx, l.DB(), reg.Guard.CanonicalDatabases)
		if err == nil {
			_, err = a.MakeSpares(ctx, n)
		}
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(out, "validate: spare victim databases not made (%v); each leg makes its own\n", err)
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
