package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fatih/color"

	"github.com/contested/contested/cluster"
)

// ClusterOptions configures ClusterTests.
type ClusterOptions struct {
	Dir      string
	Replicas int
	Keep     bool
	Local    bool
	Out      io.Writer
}

// ClusterTests runs the cluster rig over the reference service: sweep,
// build, up, the kill legs one after another, artifacts, teardown.
func ClusterTests(ctx context.Context, opts ClusterOptions) error {
	dir, err := moduleDir(opts.Dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "examples", "ledger", "cmd", "ledger")); err != nil {
		return fmt.Errorf("%w: the cluster rig runs the reference service (examples/ledger/cmd/ledger), which %s does not have", ErrUsage, dir)
	}
	root, err := resultsRoot(dir)
	if err != nil {
		return err
	}
	rep, err := cluster.Run(ctx, cluster.Options{Dir: dir, ResultsRoot: root, Replicas: opts.Replicas, Keep: opts.Keep, Local: opts.Local, Out: opts.Out})
	if rep != nil && len(rep.Legs) > 0 {
		fmt.Fprintf(opts.Out, "\n%s (%s, %d replicas)\n", bold("cluster legs"), rep.Mode, rep.Replicas)
		for _, l := range rep.Legs {
			state := color.GreenString("ok")
			if !l.OK() {
				state = color.RedString("RED")
			}
			fmt.Fprintf(opts.Out, "  %-13s %-17s %s\n      injector: %s\n      victim:   %s\n", l.Name, l.Lever, state, l.Injector, l.Victim)
			if l.Error != "" {
				fmt.Fprintf(opts.Out, "      error:    %s\n", l.Error)
			}
			for _, o := range l.Oracles {
				fmt.Fprintf(opts.Out, "      %s\n", o.Detail)
			}
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "\ncluster-tests: %s\n", color.GreenString("GREEN"))
	return nil
}
