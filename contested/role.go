package contested

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// The variables a worker process of the test binary reads: the role it
// plays, its arguments (a JSON array: never on its command line, where a
// DSN's password would show in ps), and the descriptor it reports its
// progress on.
const (
	envRole       = "CONTESTED_WORKER_ROLE"
	envRoleArgs   = "CONTESTED_WORKER_ARGS"
	envProgressFD = "CONTESTED_WORKER_PROGRESS_FD"
)

// WorkerRole is a role the test binary can play as a worker process: its
// name, and the function that does the work.
type WorkerRole struct {
	name string
	run  func(ctx context.Context, args []string) error
}

// Role makes run the body of a worker process that TestBinary(name, ...)
// starts: the same test binary, run again, which plays no test and calls
// run with the arguments TestBinary was given. run's ctx ends when the
// process is asked to stop (SIGTERM, SIGINT); return nil when the work is
// done (exit status 0), or an error (printed, exit status 1). A worker
// that returns ctx's error after a stop exits 0. The standard log package
// writes each line with its file and line (log.Lshortfile), which the
// test's log keeps as the worker's own.
//
// Hand the roles to Main, or to Serve when TestMain has a set-up of its
// own.
func Role(name string, run func(ctx context.Context, args []string) error) WorkerRole {
	return WorkerRole{name: name, run: run}
}

// Serve makes this process the worker TestBinary started, when it is one:
// it runs the role it names and exits. In the test binary's ordinary run
// it returns at once. Call it first in TestMain, before any set-up, which
// a worker process would do too:
//
//	func TestMain(m *testing.M) {
//		contested.Serve(contested.Role("jobs", runJobs))
//		stop := startQueue()
//		code := contested.Run(m)
//		stop()
//		os.Exit(code)
//	}
//
// Main calls it itself.
func Serve(roles ...WorkerRole) {
	name, ok := os.LookupEnv(envRole)
	if !ok {
		return
	}
	os.Exit(serveRole(name, roles))
}

// serveRole runs the role named name and returns the exit code.
func serveRole(name string, roles []WorkerRole) int {
	i := slices.IndexFunc(roles, func(r WorkerRole) bool { return r.name == name })
	if i < 0 {
		var known []string
		for _, r := range roles {
			known = append(known, r.name)
		}
		fmt.Fprintf(os.Stderr, "contested: this test binary has no worker role %q (its roles: %v); hand it to contested.Main or contested.Serve: contested.Role(%q, run)\n", name, known, name)
		return 2
	}
	var args []string
	if v := os.Getenv(envRoleArgs); v != "" {
		if err := json.Unmarshal([]byte(v), &args); err != nil {
			fmt.Fprintf(os.Stderr, "contested: worker %s: %s: %v\n", name, envRoleArgs, err)
			return 2
		}
	}
	log.SetOutput(os.Stderr)
	log.SetFlags(log.Lshortfile)
	log.SetPrefix("")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := roles[i].run(ctx, args)
	switch {
	case err == nil, ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return 0
	}
	fmt.Fprintf(os.Stderr, "worker %s: %v\n", name, err)
	return 1
}

// TestBinary returns the command of a worker process that runs this test
// binary again as role (Role), with args: what StartWorker takes. The
// process runs no test: Main (or Serve) runs the role in it.
//
//	w := leg.StartWorker(contested.TestBinary("jobs", "-queue", "default"),
//		contested.WorkerEnv("JOBS_DSN="+leg.DSN()))
func TestBinary(role string, args ...string) func() *exec.Cmd {
	return func() *exec.Cmd {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		b, _ := json.Marshal(args)
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), envRole+"="+role, envRoleArgs+"="+string(b))
		return cmd
	}
}

// progress is the pipe a worker process reports its progress on.
var progress struct {
	once sync.Once
	f    *os.File
	mu   sync.Mutex
}

// Progressed reports, from a worker process, that it did n more units of
// work (a job done, a batch committed): its leg counts them as the steps
// its schedule kills the worker on, and a restarted worker's first report
// proves it resumed. Call it once the work is durable (after the commit),
// never before. Outside a worker a leg started, it does nothing.
func Progressed(n int) {
	if n <= 0 {
		return
	}
	progress.once.Do(func() {
		fd, err := strconv.Atoi(os.Getenv(envProgressFD))
		if err == nil && fd > 2 {
			progress.f = os.NewFile(uintptr(fd), "contested-progress")
		}
	})
	if progress.f == nil {
		return
	}
	progress.mu.Lock()
	defer progress.mu.Unlock()
	fmt.Fprintf(progress.f, "%d\n", n)
}
