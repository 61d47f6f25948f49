package targets

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/magefile/mage/mg"

	"github.com/contested/contested/internal/command"
	"github.com/contested/contested/internal/secret"
)

// workers are the targets' commands as a worker runs them, by the name the
// Mage target passes to command.Supervise, with the target's arguments.
var workers = map[string]command.Target{
	"fault-preflight": func(ctx context.Context, args []string) error {
		required := flagBool(args, "required")
		return run(func(out io.Writer) error {
			return command.FaultPreflight(ctx, command.PreflightOptions{Required: required, Out: out})
		})
	},
	"validate": func(ctx context.Context, args []string) error {
		fs := flag.NewFlagSet("validate", flag.ContinueOnError)
		shard := fs.String("shard", "", "")
		reuse := fs.Bool("reuse", false, "")
		full := fs.Bool("full", false, "")
		planFile := fs.String("plan", "", "")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %v", command.ErrUsage, err)
		}
		set, planSet := false, false
		fs.Visit(func(f *flag.Flag) {
			set = set || f.Name == "shard"
			planSet = planSet || f.Name == "plan"
		})
		if *reuse && *full {
			return fmt.Errorf("%w: -reuse and -full contradict each other: give one", command.ErrUsage)
		}
		if planSet && *planFile == "" {
			return fmt.Errorf("%w: -plan needs the plan's file: -plan test-results/plan.json", command.ErrUsage)
		}
		return run(func(out io.Writer) error {
			return command.Validate(ctx, command.ValidateOptions{Shard: *shard, ShardSet: set, Reuse: *reuse, Full: *full, Plan: *planFile, Out: out})
		})
	},
	"plan": func(ctx context.Context, args []string) error {
		fs := flag.NewFlagSet("plan", flag.ContinueOnError)
		since := fs.String("since", "", "")
		all := fs.Bool("all", false, "")
		author := fs.Bool("author", false, "")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %v", command.ErrUsage, err)
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: plan takes no arguments, only -since REV, -all and -author (got %q)", command.ErrUsage, fs.Args())
		}
		return run(func(out io.Writer) error {
			return command.Plan(ctx, command.PlanOptions{Since: *since, All: *all, Author: *author, Out: out})
		})
	},
	"program-gate": func(ctx context.Context, args []string) error {
		opts := command.ProgramGateOptions{}
		if len(args) > 0 && args[0] == mergeFlag {
			opts.MergeSet, opts.Merge = true, args[1:]
		}
		return run(func(out io.Writer) error { opts.Out = out; return command.ProgramGate(ctx, opts) })
	},
	"contested": func(ctx context.Context, args []string) error {
		return run(func(out io.Writer) error {
			return command.Contested(ctx, command.ContestedOptions{Surface: arg(args, 0), Out: out})
		})
	},
	"arbitrate": func(ctx context.Context, args []string) error {
		rerun := len(args) > 1 && flagBool(args[1:], "rerun")
		return run(func(out io.Writer) error {
			return command.Arbitrate(ctx, command.ArbitrateOptions{Test: arg(args, 0), Rerun: rerun, Out: out})
		})
	},
	"cluster-tests": func(ctx context.Context, args []string) error {
		fs := flag.NewFlagSet("cluster-tests", flag.ContinueOnError)
		replicas := fs.Int("replicas", 0, "")
		keep := fs.Bool("keep", false, "")
		local := fs.Bool("local", false, "")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %v", command.ErrUsage, err)
		}
		opts := command.ClusterOptions{Replicas: *replicas, Keep: *keep, Local: *local}
		return run(func(out io.Writer) error { opts.Out = out; return command.ClusterTests(ctx, opts) })
	},
	"images": func(ctx context.Context, _ []string) error {
		return run(func(out io.Writer) error { return command.Images(ctx, out) })
	},
	"sweep": func(ctx context.Context, _ []string) error {
		return run(func(out io.Writer) error { return command.Sweep(ctx, out) })
	},
	"bench": func(ctx context.Context, args []string) error {
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		benchtime := fs.String("benchtime", "", "")
		filter := fs.String("filter", "", "")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %v", command.ErrUsage, err)
		}
		opts := command.BenchOptions{Benchtime: *benchtime, Filter: *filter}
		return run(func(out io.Writer) error { opts.Out = out; return command.Bench(ctx, opts) })
	},
	"history": func(ctx context.Context, args []string) error {
		fs := flag.NewFlagSet("history", flag.ContinueOnError)
		test := fs.String("test", "", "")
		last := fs.Int("last", 0, "")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %v", command.ErrUsage, err)
		}
		opts := command.HistoryOptions{Test: *test, Last: *last}
		return run(func(out io.Writer) error { opts.Out = out; return command.History(ctx, opts) })
	},
	"mutants": func(ctx context.Context, args []string) error {
		return run(func(out io.Writer) error {
			return command.Mutants(ctx, command.MutantsOptions{Patterns: args, Out: out})
		})
	},
	"degraded": func(ctx context.Context, args []string) error {
		fs := flag.NewFlagSet("degraded", flag.ContinueOnError)
		keep := fs.Bool("keep", false, "")
		cells := fs.String("cells", "", "")
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %v", command.ErrUsage, err)
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: degraded takes no arguments, only -keep and -cells=PATTERN[,PATTERN] (got %q)", command.ErrUsage, fs.Args())
		}
		opts := command.DegradedOptions{Keep: *keep, Cells: splitList(*cells)}
		return run(func(out io.Writer) error { opts.Out = out; return command.Degraded(ctx, opts) })
	},
	"certkey": func(ctx context.Context, args []string) error {
		return run(func(out io.Writer) error {
			return command.Certkey(command.CertkeyOptions{Dir: arg(args, 0), Out: out})
		})
	},
	// The warm layer of the pre-push loop.
	"layer": func(ctx context.Context, args []string) error {
		return run(func(out io.Writer) error {
			return command.Layer(ctx, command.LayerOptions{Action: arg(args, 0), Out: out})
		})
	},
}

// run gives a command its output writer and maps its error to an exit
// status. Everything a target prints goes through secret.Writer, line by
// line, so no password reaches the terminal or a CI log, whichever code
// printed it; the error the worker prints ("Error: …") is scrubbed the
// same way. Under GitHub Actions it also goes through command.Output's
// guard: inside stop-commands blocks, so that nothing a test printed is
// read as a workflow command; the command's own annotations are written
// between the blocks.
func run(cmd func(out io.Writer) error) error { return runTo(os.Stdout, cmd) }

func runTo(w io.Writer, cmd func(out io.Writer) error) error {
	sw := secret.NewWriter(w)
	out := command.Output(sw)
	err := cmd(out)
	out.Close()
	sw.Flush()
	return exit(err)
}

// exit turns a command's error into an exit status (command.ExitCode),
// with its message scrubbed of secrets.
func exit(err error) error {
	if err == nil {
		return nil
	}
	return mg.Fatal(command.ExitCode(err), secret.ScrubString(err.Error()))
}

func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func flagBool(args []string, name string) bool {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	v := fs.Bool(name, false, "")
	_ = fs.Parse(args)
	return *v
}

func boolArg(name string, v *bool) string {
	return "-" + name + "=" + strconv.FormatBool(v != nil && *v)
}
