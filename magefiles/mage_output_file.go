//go:build ignore
// +build ignore

package main

import (
	_context "context"
	_flag "flag"
	_fmt "fmt"
	_io "io"
	_log "log"
	_os "os"
	_signal "os/signal"
	_filepath "path/filepath"
	_sort "sort"
	_strconv "strconv"
	_strings "strings"
	_syscall "syscall"
	_tabwriter "text/tabwriter"
	_time "time"
	targets_mageimport "github.com/contested/contested/magefiles/targets"
	
)

func main() {
	// Use local types and functions in order to avoid name conflicts with additional magefiles.
	type arguments struct {
		Verbose       bool          // print out log statements
		List          bool          // print out a list of targets
		Help          bool          // print out help for a specific target
		Timeout       _time.Duration // set a timeout to running the targets
		Args          []string      // args contain the non-flag command-line arguments
	}

	parseBool := func(env string) bool {
		val := _os.Getenv(env)
		if val == "" {
			return false
		}		
		b, err := _strconv.ParseBool(val)
		if err != nil {
			_log.Printf("warning: environment variable %s is not a valid bool value: %v", env, val)
			return false
		}
		return b
	}

	parseDuration := func(env string) _time.Duration {
		val := _os.Getenv(env)
		if val == "" {
			return 0
		}		
		d, err := _time.ParseDuration(val)
		if err != nil {
			_log.Printf("warning: environment variable %s is not a valid duration value: %v", env, val)
			return 0
		}
		return d
	}
	args := arguments{}
	fs := _flag.FlagSet{}
	fs.SetOutput(_os.Stdout)

	// default flag set with ExitOnError and auto generated PrintDefaults should be sufficient
	fs.BoolVar(&args.Verbose, "v", parseBool("MAGEFILE_VERBOSE"), "show verbose output when running targets")
	fs.BoolVar(&args.List, "l", parseBool("MAGEFILE_LIST"), "list targets for this binary")
	fs.BoolVar(&args.Help, "h", parseBool("MAGEFILE_HELP"), "print out help for a specific target")
	fs.DurationVar(&args.Timeout, "t", parseDuration("MAGEFILE_TIMEOUT"), "timeout in duration parsable format (e.g. 5m30s)")
	fs.Usage = func() {
		_fmt.Fprintf(_os.Stdout, `
%s [options] [target]

Commands:
  -l    list targets in this binary
  -h    show this help

Options:
  -h    show description of a target
  -t <string>
        timeout in duration parsable format (e.g. 5m30s)
  -v    show verbose output when running targets
 `[1:], _filepath.Base(_os.Args[0]))
	}
	if err := fs.Parse(_os.Args[1:]); err != nil {
		// flag will have printed out an error already.
		return
	}
	args.Args = fs.Args()
	if args.Help && len(args.Args) == 0 {
		fs.Usage()
		return
	}
		
	var printName = func(str string) string {
	// color is ANSI color type
	type color int

	// If you add/change/remove any items in this constant,
	// you will need to run "stringer -type=color" in this directory again.
	// NOTE: Please keep the list in an alphabetical order.
	const (
		black color = iota
		red
		green
		yellow
		blue
		magenta
		cyan
		white
		brightblack
		brightred
		brightgreen
		brightyellow
		brightblue
		brightmagenta
		brightcyan
		brightwhite
	)

	// AnsiColor are ANSI color codes for supported terminal colors.
	var ansiColor = map[color]string{
		black:         "\u001b[30m",
		red:           "\u001b[31m",
		green:         "\u001b[32m",
		yellow:        "\u001b[33m",
		blue:          "\u001b[34m",
		magenta:       "\u001b[35m",
		cyan:          "\u001b[36m",
		white:         "\u001b[37m",
		brightblack:   "\u001b[30;1m",
		brightred:     "\u001b[31;1m",
		brightgreen:   "\u001b[32;1m",
		brightyellow:  "\u001b[33;1m",
		brightblue:    "\u001b[34;1m",
		brightmagenta: "\u001b[35;1m",
		brightcyan:    "\u001b[36;1m",
		brightwhite:   "\u001b[37;1m",
	}

	const colorName = "blackredgreenyellowbluemagentacyanwhitebrightblackbrightredbrightgreenbrightyellowbrightbluebrightmagentabrightcyanbrightwhite"

	var colorIndex = [...]uint8{0, 5, 8, 13, 19, 23, 30, 34, 39, 50, 59, 70, 82, 92, 105, 115, 126}

	colorToLowerString := func(i color) string {
		if i < 0 || i >= color(len(colorIndex)-1) {
			return "color(" + _strconv.FormatInt(int64(i), 10) + ")"
		}
		return colorName[colorIndex[i]:colorIndex[i+1]]
	}

	// ansiColorReset is an ANSI color code to reset the terminal color.
	const ansiColorReset = "\033[0m"

	// defaultTargetAnsiColor is a default ANSI color for colorizing targets.
	// It is set to Cyan as an arbitrary color, because it has a neutral meaning
	var defaultTargetAnsiColor = ansiColor[cyan]

	getAnsiColor := func(color string) (string, bool) {
		colorLower := _strings.ToLower(color)
		for k, v := range ansiColor {
			colorConstLower := colorToLowerString(k)
			if colorConstLower == colorLower {
				return v, true
			}
		}
		return "", false
	}

	// Terminals which  don't support color:
	//
	//	TERM=vt100
	//	TERM=cygwin
	//	TERM=xterm-mono
	var noColorTerms = map[string]bool{
		"vt100":      false,
		"cygwin":     false,
		"xterm-mono": false,
	}

	// terminalSupportsColor checks if the current console supports color output
	//
	// Supported:
	//
	//	linux, mac, or windows's ConEmu, Cmder, putty, git-bash.exe, pwsh.exe
	//
	// Not supported:
	//
	//	windows cmd.exe, powerShell.exe
	terminalSupportsColor := func() bool {
		envTerm := _os.Getenv("TERM")
		if _, ok := noColorTerms[envTerm]; ok {
			return false
		}
		return true
	}

	// enableColor reports whether the user has requested to enable a color output.
	enableColor := func() bool {
		b, _ := _strconv.ParseBool(_os.Getenv("MAGEFILE_ENABLE_COLOR"))
		return b
	}

	// targetColor returns the ANSI color which should be used to colorize targets.
	targetColor := func() string {
		s, exists := _os.LookupEnv("MAGEFILE_TARGET_COLOR")
		if exists {
			if c, ok := getAnsiColor(s); ok {
				return c
			}
		}
		return defaultTargetAnsiColor
	}

	// store the color terminal variables, so that the detection isn't repeated for each target
	var enableColorValue = enableColor() && terminalSupportsColor()
	var targetColorValue = targetColor()

	if enableColorValue {
		return _fmt.Sprintf("%s%s%s", targetColorValue, str, ansiColorReset)
	}

	return str
}


	list := func() error {
		_fmt.Println(`contested tells you whether your services survive adversity: fault legs through a real Toxiproxy and Postgres, a record of every fault armed and fired, a gate that refuses a green run without faults, and an arbitration ladder that gives every failure an owner and an action.
`)
		targets := map[string]string{
			"arbitrate": "walks the arbitration ladder for a failing test id and ends with an owner and an action: step 1 maps the test to its surface (a test no surface lists is not a contract test: exit 2, with the go test -run command that reruns it, to fix like any unit test); step 2 runs fault-preflight -required (failure: CANNOT RUN, owner fault layer, exit 3); step 3 reruns the test alone to tell flaky from consistent and runs the surface's contract in isolation: RED → owner component, with leg, seed and replay command; GREEN → owner test author (fix the test without loosening it), or capacity when the last validate run recorded saturation.",
			"bench": "runs the project's benchmarks and writes a table and test-results/bench/bench.json: bring-up per provider (cold image builds and warm), per-leg overhead (p50, p99), proxied against direct and against a bare Toxiproxy binary in front of the same Postgres, gate verification at 10k and 100k records, lease throughput with 16 clients, porcupine check time for a few thousand operations; then, when -filter selects AdopterValidate, it times 'go tool mage validate' against 'go test -count=1 ./...' in a copy of testdata/adopter (warm when a warm layer is up).",
			"clusterTests": "(cluster-tests) runs the module's service as several replicas behind Toxiproxy with Postgres and contests it with kill legs: one replica killed mid-stream and restarted, every replica killed at once and restarted, one replica cut off from the database and healed.",
			"contested": "runs a surface's fault legs in isolation over its seed budget and gives the contract verdict: GREEN, RED or CANNOT RUN.",
			"degraded": "runs the degraded-UX stage: a web front walked by headless Chromium under standing faults.",
			"faultPreflight": "(fault-preflight) checks the fault layer: Toxiproxy answers /version, its control API is published on loopback only, its proxies listen where only this host reaches them, the test-plane Postgres answers, and the port-lease table works.",
			"history": "prints the flake history every validate, contested and arbitrate appends to test-results/history/outcomes.jsonl: for a test (TestX, TestX/leg or pkg.TestX), how many of its last runs failed, the first failing run and its commit, each leg's count with the seeds that failed, and one mark per run (.",
			"images": "makes sure the fault layer's images are in the Docker engine, building them locally when they cannot be pulled: Toxiproxy from the Go module on scratch, Postgres from the host's Debian mirror (debootstrap, needs root).",
			"layer": "manages the warm layer of the pre-push loop: \"up\" starts a containers fault layer that outlives the command (a stale one, whose images changed or whose containers stopped, is recreated), \"status\" prints what runs, its coordinates, age and images, \"down\" removes it.",
			"mutants": "runs mutation testing with go-gremlins/gremlins (pinned as a tool in go.mod: go get -tool github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0) over package patterns, by default the registry's [mutants] packages, else the packages its surfaces name.",
			"programGate": "(program-gate) runs fault-preflight -required, then the six verification phases over whatever fault records are on disk.",
			"sweep": "removes what killed runs left behind on this host: containers, networks and volumes labelled by contested whose owner process is gone, and embedded layers' data directories.",
			"validate": "is the paired run: fault layer up, fault-preflight -required, purge the old records and stamp, run the battery (go test ./...), verify the six gate phases, judge each registered surface by contested's rules, and arbitrate each failing contract test (other failures are listed).",
		}

		keys := make([]string, 0, len(targets))
		for name := range targets {
			keys = append(keys, name)
		}
		_sort.Strings(keys)

		_fmt.Println("Targets:")
		w := _tabwriter.NewWriter(_os.Stdout, 0, 4, 4, ' ', 0)
		for _, name := range keys {
			_fmt.Fprintf(w, "  %v\t%v\n", printName(name), targets[name])
		}
		err := w.Flush()
		return err
	}

	var ctx _context.Context
	ctxCancel := func(){}

	// by deferring in a closure, we let the cancel function get replaced
	// by the getContext function.
	defer func() {
		ctxCancel()
	}()

	getContext := func() (_context.Context, func()) {
		if ctx == nil {
			if args.Timeout != 0 {
				ctx, ctxCancel = _context.WithTimeout(_context.Background(), args.Timeout)
			} else {
				ctx, ctxCancel = _context.WithCancel(_context.Background())
			}
		}

		return ctx, ctxCancel
	}

	runTarget := func(logger *_log.Logger, fn func(_context.Context) error) interface{} {
		var err interface{}
		ctx, cancel := getContext()
		d := make(chan interface{})
		go func() {
			defer func() {
				err := recover()
				d <- err
			}()
			err := fn(ctx)
			d <- err
		}()
		sigCh := make(chan _os.Signal, 1)
		_signal.Notify(sigCh, _syscall.SIGINT)
		select {
		case <-sigCh:
			logger.Println("cancelling mage targets, waiting up to 5 seconds for cleanup...")
			cancel()
			cleanupCh := _time.After(5 * _time.Second)

			select {
			// target exited by itself
			case err = <-d:
				return err
			// cleanup timeout exceeded
			case <-cleanupCh:
				return _fmt.Errorf("cleanup timeout exceeded")
			// second SIGINT received
			case <-sigCh:
				logger.Println("exiting mage")
				return _fmt.Errorf("exit forced")
			}
		case <-ctx.Done():
			cancel()
			e := ctx.Err()
			_fmt.Printf("ctx err: %v\n", e)
			return e
		case err = <-d:
			// we intentionally don't cancel the context here, because
			// the next target will need to run with the same _context.
			return err
		}
	}
	// This is necessary in case there aren't any targets, to avoid an unused
	// variable error.
	_ = runTarget

	handleError := func(logger *_log.Logger, err interface{}) {
		if err != nil {
			logger.Printf("Error: %+v\n", err)
			type code interface {
				ExitStatus() int
			}
			if c, ok := err.(code); ok {
				_os.Exit(c.ExitStatus())
			}
			_os.Exit(1)
		}
	}
	_ = handleError

	// Set MAGEFILE_VERBOSE so mg.Verbose() reflects the flag value.
	if args.Verbose {
		_os.Setenv("MAGEFILE_VERBOSE", "1")
	} else {
		_os.Setenv("MAGEFILE_VERBOSE", "0")
	}

	_log.SetFlags(0)
	if !args.Verbose {
		_log.SetOutput(_io.Discard)
	}
	logger := _log.New(_os.Stderr, "", 0)
	if args.List {
		if err := list(); err != nil {
			_log.Println(err)
			_os.Exit(1)
		}
		return
	}

	if args.Help {
		if len(args.Args) < 1 {
			logger.Println("no target specified")
			_os.Exit(2)
		}
		switch _strings.ToLower(args.Args[0]) {
			case "arbitrate":
				_fmt.Println("Arbitrate walks the arbitration ladder for a failing test id and ends\nwith an owner and an action: step 1 maps the test to its surface (a test\nno surface lists is not a contract test: exit 2, with the go test -run\ncommand that reruns it, to fix like any unit test); step 2 runs fault-preflight -required (failure: CANNOT RUN, owner\nfault layer, exit 3); step 3 reruns the test alone to tell flaky from\nconsistent and runs the surface's contract in isolation: RED → owner\ncomponent, with leg, seed and replay command; GREEN → owner test author\n(fix the test without loosening it), or capacity when the last validate\nrun recorded saturation. A test whose package fails before it runs\n(does not build, TestMain exits) is the test author's, exit 1. Saves\nladder/<test>.json and ladder/<test>.md, a ready-to-paste fix: issue. A\ntest that did not fail (passed every rerun, and did not fail in the last\nvalidate run) has nothing to arbitrate: exit 0, nothing saved.\n\n\tgo tool mage arbitrate TestConsumerContract/burst")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage arbitrate <test>\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "bench":
				_fmt.Println("Bench runs the project's benchmarks and writes a table and\ntest-results/bench/bench.json: bring-up per provider (cold image builds\nand warm), per-leg overhead (p50, p99), proxied against direct and\nagainst a bare Toxiproxy binary in front of the same Postgres, gate\nverification at 10k and 100k records, lease throughput with 16 clients,\nporcupine check time for a few thousand operations; then, when -filter\nselects AdopterValidate, it times `go tool mage validate` against `go\ntest -count=1 ./...` in a copy of testdata/adopter (warm when a warm\nlayer is up). Figures are ratios measured in the same run, each goal\nbeside its figure, not absolute promises. Exit 0 when every benchmark\nran (goals missed included), 1 when one failed.\n\n\tgo tool mage bench\n\tgo tool mage bench -benchtime=10x -filter=Verify\n\tgo tool mage bench -filter=AdopterValidate")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage bench [<flags>]\n\n")
				_fmt.Print("Flags:\n\n\t-benchtime=<string>\n\t-filter=<string>\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "clustertests":
				_fmt.Println("ClusterTests (cluster-tests) runs the module's service as several\nreplicas behind Toxiproxy with Postgres and contests it with kill legs:\none replica killed mid-stream and restarted, every replica killed at once\nand restarted, one replica cut off from the database and healed. The\nservice is the one the registry's [cluster] table names: its Go test,\nwhich configures the rig for the service (cluster.Service), runs with\nthis target's options. The rig owns the lifecycle: sweep stale rigs,\nbuild the service (static on scratch, tagged for the rig), bring\neverything up on a private network and wait for every replica's health\nendpoint, run the legs one after another, write test-results/cluster/\n(ps.txt, logs.txt, legs.json, the legs' fault records) and tear down, on\nCtrl-C and SIGTERM too. Without Docker the replicas run as local\nprocesses.\n\n\tgo tool mage cluster-tests\n\tgo tool mage cluster-tests -replicas=5 -keep    # keep the rig up; the next run reaps it\n\tgo tool mage cluster-tests -local               # replicas as local processes")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage clustertests [<flags>]\n\n")
				_fmt.Print("Flags:\n\n\t-replicas=<int>\n\t-keep=<bool>\n\t-local=<bool>\n\n")
				var aliases []string
				aliases = append(aliases, "cluster-tests")
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "contested":
				_fmt.Println("Contested runs a surface's fault legs in isolation over its seed budget\nand gives the contract verdict: GREEN, RED or CANNOT RUN. The argument is\na surface id from contested-surfaces.toml, or \"all\".\n\nEach leg gets one of ten verdicts (PASS-smoke, PASS-hardening,\nFAIL-reproducible, FAIL-nondeterministic, INCONCLUSIVE-env,\nINCONCLUSIVE-oracle-too-weak, INCONCLUSIVE-fault-not-proven,\nPARTIAL-surface, PARTIAL-model, NOT-RUN) with its evidence, or\nNOT-AT-LEVEL when the registry's levels key does not run it at this\nCONTESTED_LEVEL (left out of the surface's verdict); a RED leg comes with\nits seed and replay command. CONTESTED_SEEDS sets the seed\ncount (default: the surface's hardening budget), CONTESTED_SEED replays\none seed, CONTESTED_LEVEL sets the intensity (1 sunny, 2 stormy, 3\nradioactive). Exit 0 GREEN, 1 RED or INCONCLUSIVE, 3 CANNOT RUN.\n\n\tgo tool mage contested ledger.store\n\tCONTESTED_SEEDS=5 go tool mage contested all")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage contested <surface>\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "degraded":
				_fmt.Println("Degraded runs the degraded-UX stage: a web front walked by headless Chromium under standing faults.\n\nThe registry's web front (its [degraded] table; by default the ledger's,\ngo build ./examples/ledger/cmd/ledger, \"ledger web\") is recreated with\nits database behind a standing Toxiproxy pass-through\n(contested-degraded-<port>) of the fault layer, and a real headless\nChromium (Debian's chromium: apt-get install chromium) walks a matrix of\nflows (load the page, submit a transfer, reload after submitting) under\nconditions (backend-down, latency above the page's timeout, reset\nmid-submit, pool-exhausted). Each cell asserts what the user sees (a\nbanner or an outcome, never a 5xx page, an answer within the front's\ntimeout + 1s) and what the database holds afterwards (a confirmed\ntransfer applied exactly once, a pending one at most once, no money\nmoved under another key), and writes one fault record of class ux\n(injector: the proxy or toxic read back; victim: what the browser saw).\n\nIt holds the stage lock: layer down, layer up and validate wait for it.\nA crashed stage's overlay (marker test-results/degraded/overlay.json) is\nrestored by the next stage or validate; a failed restore keeps the\nmarker and prints how to escape by hand. Screenshots of failing cells\n(of every cell with -keep) go to test-results/degraded/, linked from\ntest-results/fault/degraded-report.html. Exit 0 every cell passed; 1 a\ncell failed or its fault did not fire; 2 bad options or registry; 3 the\nfault layer, Chromium or a restore cannot run.\n\n\tgo tool mage degraded\n\tgo tool mage degraded -keep\n\tgo tool mage degraded -cells='submit/*,load/latency'")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage degraded [<flags>]\n\n")
				_fmt.Print("Flags:\n\n\t-keep=<bool>\n\t-cells=<string>\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "faultpreflight":
				_fmt.Println("FaultPreflight (fault-preflight) checks the fault layer: Toxiproxy answers /version, its\ncontrol API is published on loopback only, its proxies listen where only\nthis host reaches them, the test-plane Postgres answers, and the\nport-lease table works. It checks the layer CONTESTED_TOXIPROXY_URL and CONTESTED_PG_DSN\nname, or brings one up (CONTESTED_LAYER) to check and tears it down.\n\nReport-only by default: failures are printed and the exit code is 0,\nexcept for a proven exposure off this host (control API published off\nloopback, proxies listening off loopback on the host's network), which\nexits 3 in any mode. With -required any failed check exits 3.\n\n\tgo tool mage fault-preflight\n\tgo tool mage fault-preflight -required")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage faultpreflight [-required=<bool>]\n\n")
				var aliases []string
				
				aliases = append(aliases, "fault-preflight")
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "history":
				_fmt.Println("History prints the flake history every validate, contested and arbitrate appends to\ntest-results/history/outcomes.jsonl: for a test (TestX, TestX/leg or\npkg.TestX), how many of its last runs failed, the first failing run and\nits commit, each leg's count with the seeds that failed, and one mark per\nrun (. passed, F failed); without a test, every test that failed in its\nlast runs, and draws their trends in test-results/history/history.html\n(inline SVG: one column per run, the commit under each). -last sets how\nmany runs (default 20). CONTESTED_HISTORY_DSN reads a team's database\ninstead. arbitrate prints the same trend before it walks the ladder.\n\n\tgo tool mage history\n\tgo tool mage history TestStockContract\n\tgo tool mage history -test=TestStockContract -last=50")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage history [<flags>]\n\n")
				_fmt.Print("Flags:\n\n\t-test=<string>\n\t-last=<int>\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "images":
				_fmt.Println("Images makes sure the fault layer's images are in the Docker engine,\nbuilding them locally when they cannot be pulled: Toxiproxy from the Go\nmodule on scratch, Postgres from the host's Debian mirror (debootstrap,\nneeds root). Run it once on an air-gapped CI machine before the battery.")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage images\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "layer":
				_fmt.Println("Layer manages the warm layer of the pre-push loop: \"up\" starts a\ncontainers fault layer that outlives the command (a stale one, whose\nimages changed or whose containers stopped, is recreated), \"status\"\nprints what runs, its coordinates, age and images, \"down\" removes it.\nWhile it is up, validate, contested, arbitrate and go test attach to it\nafter the required preflight instead of bringing up a layer of their own\n(falling back to one when it fails), and clean what each run leased in\nit. Its coordinates are kept in the user's cache directory\n(warm-layer.json under contested/).\n\n\tgo tool mage layer up\n\tgo tool mage layer status\n\tgo tool mage layer down")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage layer <action>\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "mutants":
				_fmt.Println("Mutants runs mutation testing with go-gremlins/gremlins (pinned as a tool\nin go.mod: go get -tool github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0)\nover package patterns, by default the registry's [mutants] packages, else\nthe packages its surfaces name. It brings the fault layer up (fault-preflight\n-required first: exit 3 if it fails) and runs each package's tests with\nthe battery's environment, once per mutant, in a copy of the module.\n\nPer package it reports killed, survived, timed out, not covered and not\nviable mutants, each survivor's file:line:column and mutation, and the\nkill rate of covered mutants: (killed + timed out) / (killed + survived +\ntimed out).\nSurvivors [[mutants.accepted]] lists (equivalent mutants, each with a\nreason) are listed apart and left out of the rate. Writes\ntest-results/mutants/mutants.json. Exit 1 when the kill rate over all\npackages is below [mutants] threshold or a package cannot be measured\n(its tests fail unmutated); 2 on a bad pattern or registry; 3 when the\nfault layer or gremlins cannot run.\n\n\tgo tool mage mutants\n\tgo tool mage mutants ./faultlayer/lease ./internal/...\n\tgo tool mage mutants -packages=./faultlayer/lease,./faultrecord")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage mutants [-packages=<string>]\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "programgate":
				_fmt.Println("ProgramGate (program-gate) runs fault-preflight -required, then the six verification\nphases over whatever fault records are on disk. For triage after a\nbattery; never a substitute for validate.\n\nWith -merge DIR... it certifies the shards of one split battery as one\nrun instead (their results directories, as validate -shard=I/N wrote\nthem): every shard of 1..N present once, one shared run id, every shard's\nrecords intact and postdating its own stamp, every test owned by exactly\none shard; then the six phases and the surfaces' verdicts over the\nunion, in this module's results directory. It needs no fault layer.\n\n\tgo tool mage program-gate\n\tgo tool mage program-gate -merge shards/1 shards/2 shards/3")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage programgate [-merge=<string>]\n\n")
				var aliases []string
				
				
				aliases = append(aliases, "program-gate")
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "sweep":
				_fmt.Println("Sweep removes what killed runs left behind on this host: containers,\nnetworks and volumes labelled by contested whose owner process is gone,\nand embedded layers' data directories. Nothing unlabelled is touched.")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage sweep\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				case "validate":
				_fmt.Println("Validate is the paired run: fault layer up, fault-preflight -required,\npurge the old records and stamp, run the battery (go test ./...), verify\nthe six gate phases, judge each registered surface by contested's rules,\nand arbitrate each failing contract test (other failures are listed).\n\nWith -shard=I/N (or CONTESTED_SHARD=I/N) it runs shard I of N: its share\nof the battery (split by package, then by test, balanced by\ntest-results/shards/timings.json when present) with its own layer, stamp\nand run id under the run id all the shards share, and writes shard.json\nbeside validate.json. program-gate -merge certifies the shards as one.\n\n\tgo tool mage validate\n\tgo tool mage validate -shard=2/3")
				_fmt.Println()
				
				_fmt.Print("Usage:\n\n\tmage validate [-shard=<string>]\n\n")
				var aliases []string
				
				
				
				if len(aliases) > 0 {
					_sort.Strings(aliases)
					_fmt.Printf("Aliases: %s\n\n", _strings.Join(aliases, ", "))
				}
				return
				default:
				logger.Printf("Unknown target: %q\n", args.Args[0])
				_os.Exit(2)
		}
	}
	if len(args.Args) < 1 {
		if err := list(); err != nil {
			logger.Println("Error:", err)
			_os.Exit(1)
		}
		return
	}
	for x := 0; x < len(args.Args); {
		target := args.Args[x]
		x++

		// resolve aliases
		switch _strings.ToLower(target) {
		
			case "cluster-tests":
				target = "ClusterTests"
			case "fault-preflight":
				target = "FaultPreflight"
			case "program-gate":
				target = "ProgramGate"
		}

		switch _strings.ToLower(target) {
		
		
		
			
				case "arbitrate":
					expected := x + 1
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Arbitrate\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Arbitrate")
					}
					
			arg0 := args.Args[x]
			x++
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Arbitrate(ctx, arg0)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "bench":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Bench\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Bench")
					}
					
				var arg0 *string
				var arg1 *string
				for x < len(args.Args) && _strings.HasPrefix(args.Args[x], "-") {
					_optArg := args.Args[x]
					_eqIdx := _strings.Index(_optArg, "=")
					var _optName, _optVal string
					if _eqIdx < 0 {
						_optName = _strings.ToLower(_optArg[1:])
						switch _optName {
						default:
							logger.Printf("invalid option %q for target \"Bench\", expected -name=value format\n", _optArg)
							_os.Exit(2)
						}
					} else {
						_optName = _strings.ToLower(_optArg[1:_eqIdx])
						_optVal = _optArg[_eqIdx+1:]
					}
					switch _optName {
					case "benchtime":
						_tmp0 := _optVal
						arg0 = &_tmp0
					case "filter":
						_tmp1 := _optVal
						arg1 = &_tmp1
					default:
						logger.Printf("unknown option %q for target \"Bench\"\n", _optName)
						_os.Exit(2)
					}
					x++
				}
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Bench(ctx, arg0, arg1)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "clustertests":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"ClusterTests\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "ClusterTests")
					}
					
				var arg0 *int
				var arg1 *bool
				var arg2 *bool
				for x < len(args.Args) && _strings.HasPrefix(args.Args[x], "-") {
					_optArg := args.Args[x]
					_eqIdx := _strings.Index(_optArg, "=")
					var _optName, _optVal string
					if _eqIdx < 0 {
						_optName = _strings.ToLower(_optArg[1:])
						switch _optName {
						case "keep":
							_optVal = "true"
						case "local":
							_optVal = "true"
						default:
							logger.Printf("invalid option %q for target \"ClusterTests\", expected -name=value format\n", _optArg)
							_os.Exit(2)
						}
					} else {
						_optName = _strings.ToLower(_optArg[1:_eqIdx])
						_optVal = _optArg[_eqIdx+1:]
					}
					switch _optName {
					case "replicas":
						_tmp0, err := _strconv.Atoi(_optVal)
						if err != nil {
							logger.Printf("can't convert option %q value %q to int\n", _optName, _optVal)
							_os.Exit(2)
						}
						arg0 = &_tmp0
					case "keep":
						_tmp1, err := _strconv.ParseBool(_optVal)
						if err != nil {
							logger.Printf("can't convert option %q value %q to bool\n", _optName, _optVal)
							_os.Exit(2)
						}
						arg1 = &_tmp1
					case "local":
						_tmp2, err := _strconv.ParseBool(_optVal)
						if err != nil {
							logger.Printf("can't convert option %q value %q to bool\n", _optName, _optVal)
							_os.Exit(2)
						}
						arg2 = &_tmp2
					default:
						logger.Printf("unknown option %q for target \"ClusterTests\"\n", _optName)
						_os.Exit(2)
					}
					x++
				}
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.ClusterTests(ctx, arg0, arg1, arg2)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "contested":
					expected := x + 1
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Contested\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Contested")
					}
					
			arg0 := args.Args[x]
			x++
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Contested(ctx, arg0)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "degraded":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Degraded\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Degraded")
					}
					
				var arg0 *bool
				var arg1 *string
				for x < len(args.Args) && _strings.HasPrefix(args.Args[x], "-") {
					_optArg := args.Args[x]
					_eqIdx := _strings.Index(_optArg, "=")
					var _optName, _optVal string
					if _eqIdx < 0 {
						_optName = _strings.ToLower(_optArg[1:])
						switch _optName {
						case "keep":
							_optVal = "true"
						default:
							logger.Printf("invalid option %q for target \"Degraded\", expected -name=value format\n", _optArg)
							_os.Exit(2)
						}
					} else {
						_optName = _strings.ToLower(_optArg[1:_eqIdx])
						_optVal = _optArg[_eqIdx+1:]
					}
					switch _optName {
					case "keep":
						_tmp0, err := _strconv.ParseBool(_optVal)
						if err != nil {
							logger.Printf("can't convert option %q value %q to bool\n", _optName, _optVal)
							_os.Exit(2)
						}
						arg0 = &_tmp0
					case "cells":
						_tmp1 := _optVal
						arg1 = &_tmp1
					default:
						logger.Printf("unknown option %q for target \"Degraded\"\n", _optName)
						_os.Exit(2)
					}
					x++
				}
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Degraded(ctx, arg0, arg1)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "faultpreflight":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"FaultPreflight\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "FaultPreflight")
					}
					
				var arg0 *bool
				for x < len(args.Args) && _strings.HasPrefix(args.Args[x], "-") {
					_optArg := args.Args[x]
					_eqIdx := _strings.Index(_optArg, "=")
					var _optName, _optVal string
					if _eqIdx < 0 {
						_optName = _strings.ToLower(_optArg[1:])
						switch _optName {
						case "required":
							_optVal = "true"
						default:
							logger.Printf("invalid option %q for target \"FaultPreflight\", expected -name=value format\n", _optArg)
							_os.Exit(2)
						}
					} else {
						_optName = _strings.ToLower(_optArg[1:_eqIdx])
						_optVal = _optArg[_eqIdx+1:]
					}
					switch _optName {
					case "required":
						_tmp0, err := _strconv.ParseBool(_optVal)
						if err != nil {
							logger.Printf("can't convert option %q value %q to bool\n", _optName, _optVal)
							_os.Exit(2)
						}
						arg0 = &_tmp0
					default:
						logger.Printf("unknown option %q for target \"FaultPreflight\"\n", _optName)
						_os.Exit(2)
					}
					x++
				}
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.FaultPreflight(ctx, arg0)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "history":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"History\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "History")
					}
					
				var arg0 *string
				var arg1 *int
				for x < len(args.Args) && _strings.HasPrefix(args.Args[x], "-") {
					_optArg := args.Args[x]
					_eqIdx := _strings.Index(_optArg, "=")
					var _optName, _optVal string
					if _eqIdx < 0 {
						_optName = _strings.ToLower(_optArg[1:])
						switch _optName {
						default:
							logger.Printf("invalid option %q for target \"History\", expected -name=value format\n", _optArg)
							_os.Exit(2)
						}
					} else {
						_optName = _strings.ToLower(_optArg[1:_eqIdx])
						_optVal = _optArg[_eqIdx+1:]
					}
					switch _optName {
					case "test":
						_tmp0 := _optVal
						arg0 = &_tmp0
					case "last":
						_tmp1, err := _strconv.Atoi(_optVal)
						if err != nil {
							logger.Printf("can't convert option %q value %q to int\n", _optName, _optVal)
							_os.Exit(2)
						}
						arg1 = &_tmp1
					default:
						logger.Printf("unknown option %q for target \"History\"\n", _optName)
						_os.Exit(2)
					}
					x++
				}
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.History(ctx, arg0, arg1)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "images":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Images\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Images")
					}
					
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Images(ctx)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "layer":
					expected := x + 1
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Layer\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Layer")
					}
					
			arg0 := args.Args[x]
			x++
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Layer(ctx, arg0)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "mutants":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Mutants\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Mutants")
					}
					
				var arg0 *string
				for x < len(args.Args) && _strings.HasPrefix(args.Args[x], "-") {
					_optArg := args.Args[x]
					_eqIdx := _strings.Index(_optArg, "=")
					var _optName, _optVal string
					if _eqIdx < 0 {
						_optName = _strings.ToLower(_optArg[1:])
						switch _optName {
						default:
							logger.Printf("invalid option %q for target \"Mutants\", expected -name=value format\n", _optArg)
							_os.Exit(2)
						}
					} else {
						_optName = _strings.ToLower(_optArg[1:_eqIdx])
						_optVal = _optArg[_eqIdx+1:]
					}
					switch _optName {
					case "packages":
						_tmp0 := _optVal
						arg0 = &_tmp0
					default:
						logger.Printf("unknown option %q for target \"Mutants\"\n", _optName)
						_os.Exit(2)
					}
					x++
				}
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Mutants(ctx, arg0)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "programgate":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"ProgramGate\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "ProgramGate")
					}
					
				var arg0 *string
				for x < len(args.Args) && _strings.HasPrefix(args.Args[x], "-") {
					_optArg := args.Args[x]
					_eqIdx := _strings.Index(_optArg, "=")
					var _optName, _optVal string
					if _eqIdx < 0 {
						_optName = _strings.ToLower(_optArg[1:])
						switch _optName {
						default:
							logger.Printf("invalid option %q for target \"ProgramGate\", expected -name=value format\n", _optArg)
							_os.Exit(2)
						}
					} else {
						_optName = _strings.ToLower(_optArg[1:_eqIdx])
						_optVal = _optArg[_eqIdx+1:]
					}
					switch _optName {
					case "merge":
						_tmp0 := _optVal
						arg0 = &_tmp0
					default:
						logger.Printf("unknown option %q for target \"ProgramGate\"\n", _optName)
						_os.Exit(2)
					}
					x++
				}
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.ProgramGate(ctx, arg0)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "sweep":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Sweep\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Sweep")
					}
					
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Sweep(ctx)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
				case "validate":
					expected := x + 0
					if expected > len(args.Args) {
						// note that expected and args at this point include the arg for the target itself
						// so we subtract 1 here to show the number of args without the target.
						logger.Printf("not enough arguments for target \"Validate\", expected %v, got %v\n", expected-1, len(args.Args)-1)
						_os.Exit(2)
					}
					if args.Verbose {
						logger.Println("Running target:", "Validate")
					}
					
				var arg0 *string
				for x < len(args.Args) && _strings.HasPrefix(args.Args[x], "-") {
					_optArg := args.Args[x]
					_eqIdx := _strings.Index(_optArg, "=")
					var _optName, _optVal string
					if _eqIdx < 0 {
						_optName = _strings.ToLower(_optArg[1:])
						switch _optName {
						default:
							logger.Printf("invalid option %q for target \"Validate\", expected -name=value format\n", _optArg)
							_os.Exit(2)
						}
					} else {
						_optName = _strings.ToLower(_optArg[1:_eqIdx])
						_optVal = _optArg[_eqIdx+1:]
					}
					switch _optName {
					case "shard":
						_tmp0 := _optVal
						arg0 = &_tmp0
					default:
						logger.Printf("unknown option %q for target \"Validate\"\n", _optName)
						_os.Exit(2)
					}
					x++
				}
				wrapFn := func(ctx _context.Context) error {
					return targets_mageimport.Validate(ctx, arg0)
				}
				ret := runTarget(logger, wrapFn)
					handleError(logger, ret)
		default:
			logger.Printf("Unknown target specified: %q\n", target)
			_os.Exit(2)
		}
	}
}




