package contested

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// Worker is the process a crash-and-resume leg kills with SIGKILL on its
// schedule's steps and starts again when the window heals: each start is
// a new generation of it. Its progress (what the worker reports through
// Progressed, or what ProgressFrom reads) is the leg's steps, and the
// first progress of a restarted generation is the victim side's proof
// that the kills before it were recovered from. Run drives all of it.
type Worker struct {
	leg    *Leg
	proc   *levers.Worker
	newCmd func() *exec.Cmd
	env    []string
	probe  func(context.Context) (int, error)
	until  func(context.Context) (bool, error)

	mu       sync.Mutex
	gen      int  // the generation running, or the last one; from 1
	down     bool // killed by the leg and not started again yet
	total    int  // progress over every generation
	ofGen    int  // progress of the running generation
	last     int  // ProgressFrom's last reading
	kills    int  // kills so far
	proven   int  // kills whose recovery a later generation proved
	moved    time.Time
	pending  *os.File // the write end of the next generation's progress pipe
	probeErr error

	quit, stopped chan struct{} // the end of drive, and drive ended
	stopOnce      sync.Once
}

// WorkerOption configures a worker.
type WorkerOption func(*Worker)

// WorkerEnv adds variables ("NAME=value") to every generation's
// environment, after the test process's own and the leg's.
func WorkerEnv(kv ...string) WorkerOption {
	return func(w *Worker) { w.env = append(w.env, kv...) }
}

// ProgressFrom reads the worker's progress with f instead of from its own
// reports (Progressed): a count that only grows, such as the jobs its
// database holds as done. Run calls f every few milliseconds; a reading
// that grew while a generation ran is that generation's progress. Use it
// for a worker that cannot report (a command that does not import
// contested); a worker's own reports say exactly which generation did
// what, a reading cannot.
func ProgressFrom(f func(ctx context.Context) (int, error)) WorkerOption {
	return func(w *Worker) { w.probe = f }
}

// Until says when the workload is done, for a worker that never exits on
// its own (a daemon, a job runner that polls): once the leg's schedule is
// done, Run asks f every few milliseconds, and when f says true it stops
// the worker (SIGTERM, then SIGKILL after five seconds) and returns.
// Without Until, Run waits for the last generation to exit on its own.
func Until(f func(ctx context.Context) (bool, error)) WorkerOption {
	return func(w *Worker) { w.until = f }
}

// StartWorker starts the process a crash-and-resume leg kills and
// restarts, and returns it: the first generation is running. newCmd builds
// each generation's command (an exec.Cmd runs once): TestBinary runs the
// test binary as a worker role; any other command works too. Each
// generation gets the test process's environment (or the command's own
// Env), then the leg's (CONTESTED_SEED and CONTESTED_LEVEL: the worker's
// seeded choices replay with the leg's), then WorkerEnv's, and its output
// goes to the test's log, each line under the worker's own file and line
// when it printed one (the log package does in a role: Role).
//
// Drive it with Run, which runs the leg's schedule on the worker's
// progress. A test that arms and heals by itself (Arm, Heal) may instead
// Wait for a generation and Note its proof.
func (l *Leg) StartWorker(newCmd func() *exec.Cmd, opts ...WorkerOption) *Worker {
	l.t.Helper()
	if l.value.Needs()&levers.NeedProcess == 0 {
		l.t.Fatalf("contested: StartWorker on a %s leg; only %s kills a worker", l.lever, CrashAndResume)
	}
	if l.worker != nil {
		l.t.Fatalf("contested: StartWorker called twice on leg %s", l.name())
	}
	w := &Worker{leg: l, newCmd: newCmd, quit: make(chan struct{}), stopped: make(chan struct{})}
	for _, o := range opts {
		o(w)
	}
	w.proc = levers.NewWorker(l.t, w.command)
	l.worker = w
	if err := w.start(context.Background()); err != nil {
		close(w.stopped)
		l.t.Fatalf("contested: %v", err)
	}
	go w.drive()
	return w
}

// command is make's command with the leg's environment and the pipe the
// generation reports its progress through.
func (w *Worker) command() *exec.Cmd {
	cmd := w.newCmd()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	level := max(w.leg.sched.Level, 1)
	cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", envvar.Seed, w.leg.seed), fmt.Sprintf("%s=%d", envvar.Level, level))
	cmd.Env = append(cmd.Env, w.env...)
	if w.probe == nil {
		r, wr, err := os.Pipe()
		if err == nil {
			cmd.ExtraFiles = append(cmd.ExtraFiles, wr)
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", envProgressFD, 2+len(cmd.ExtraFiles)))
			w.pending = wr
			go w.read(r, w.gen+1)
		}
	}
	return cmd
}

// start starts the next generation (the first, or the heal of a kill).
func (w *Worker) start(ctx context.Context) error {
	mark := 0
	if w.probe != nil {
		n, err := w.probe(ctx)
		if err != nil {
			return fmt.Errorf("read the worker's progress before its start: %w", err)
		}
		mark = n
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.proc.Start(ctx)
	if w.pending != nil {
		w.pending.Close() // the child holds its own copy
		w.pending = nil
	}
	if err != nil {
		return err
	}
	w.gen++
	w.down, w.ofGen, w.moved = false, 0, time.Now()
	if w.probe != nil && w.gen == 1 {
		w.last = mark // what was done before the worker: not its progress
	} else if w.probe != nil && mark > w.last {
		// What grew since the last reading grew before this generation
		// started: the killed one's last commits, nobody's progress.
		w.total += mark - w.last
		w.last = mark
	}
	return nil
}

// kill kills the running generation: the crash-and-resume fault. The
// worker is down from before the signal, so that Run never takes the
// killed generation for one that exited on its own.
func (w *Worker) kill(ctx context.Context) (string, error) {
	w.mu.Lock()
	w.down = true
	w.mu.Unlock()
	status, err := w.proc.Kill(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.down = false
		return status, err
	}
	w.kills++
	return status, nil
}

// read follows generation gen's progress reports until its pipe closes.
func (w *Worker) read(r *os.File, gen int) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		n, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil || n <= 0 {
			continue
		}
		w.progressed(gen, n)
	}
}

// progressed counts n units of work generation gen did: the running
// generation's moves the schedule (drive); a killed one's, reported just
// before it died, is counted only.
func (w *Worker) progressed(gen, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total += n
	if gen == w.gen && !w.down {
		w.ofGen += n
		w.moved = time.Now()
	}
}

// reading takes a ProgressFrom reading: what grew since the last one is
// the running generation's progress, and nobody's while the worker is
// down (the killed generation's last commits, landing after it died).
func (w *Worker) reading(n int) {
	w.mu.Lock()
	grew, gen := n-w.last, w.gen
	if grew <= 0 {
		w.mu.Unlock()
		return
	}
	w.last = n
	w.mu.Unlock()
	w.progressed(gen, grew)
}

// driveEvery is how often the worker's progress moves the schedule: on a
// clock of its own, not on the worker's reports, so that a kill lands
// wherever the worker is in its work, never just after a report (which
// follows a commit, when nothing is in flight).
const driveEvery = 5 * time.Millisecond

// drive moves the leg's schedule with the worker's progress until quit
// is closed. Only the running generation's work moves it, and a
// restarted generation's recovery from every kill before it is noted
// first: a kill is never armed on the strength of a generation that has
// not worked yet, and one that lands while it recovers (level 3) never
// leaves the kill before it unproven.
func (w *Worker) drive() {
	defer close(w.stopped)
	tick := time.NewTicker(driveEvery)
	defer tick.Stop()
	fed := 0
	for {
		select {
		case <-w.quit:
			return
		case <-tick.C:
		}
		if w.probe != nil {
			n, err := w.probe(context.Background())
			w.mu.Lock()
			w.probeErr = err
			w.mu.Unlock()
			if err == nil {
				w.reading(n)
			}
		}
		w.mu.Lock()
		working := !w.down && w.ofGen > 0
		var proof string
		if working && w.proven < w.kills {
			proof = fmt.Sprintf("restarted worker (generation %d) resumed: %s since its start", w.gen, plural(w.ofGen, "unit of work", "units of work"))
			if w.kills-w.proven > 1 {
				proof += fmt.Sprintf(", recovering from the %d kills since the last generation that worked", w.kills-w.proven)
			}
			w.proven = w.kills
		}
		total := w.total
		w.mu.Unlock()
		if proof != "" {
			w.leg.noteUnlanded(proof)
		}
		if working && total > fed {
			fed = total
			w.leg.Progress(context.Background(), total)
		}
	}
}

func (w *Worker) isDown() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down
}

// Progress is the work the worker did so far, over every generation (work
// a killed generation did and a later one did again counts twice).
func (w *Worker) Progress() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// Generation is the number of the generation running (or the last one):
// 1 until the first kill's heal starts the second.
func (w *Worker) Generation() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// Running reports whether a generation is running now.
func (w *Worker) Running() bool { return w.proc.Running() }

// Wait waits for the running generation to exit on its own and returns
// its error (nil for exit status 0).
func (w *Worker) Wait(ctx context.Context) error { return w.proc.Wait(ctx) }

// Stop kills whatever generation is still running, and its progress moves
// the schedule no more; the end of the test does it anyway.
func (w *Worker) Stop() {
	w.stopOnce.Do(func() { close(w.quit) })
	<-w.stopped
	w.proc.Stop()
}

// Stall bounds how long Run waits for the worker's next progress while
// the schedule or the workload is not done: a worker that made none for
// this long is stuck, and Run says so instead of waiting for go test's
// timeout.
const Stall = time.Minute

// ErrWorkerExited: a generation the leg did not kill exited before the
// schedule was done, so the kills it had left never landed.
var ErrWorkerExited = errors.New("the worker exited before the leg's schedule was done")

// Run drives the leg's schedule with the worker: its progress is the
// steps (Leg.Progress, taken on a clock of their own, so that a kill lands
// wherever the worker is in its work, never just after a report), so the
// schedule kills the worker at the points of progress its seed draws and
// starts the next generation when the window heals, and each restarted
// generation's first progress is noted as its recovery (Leg.Note) before
// any step it takes can arm the next kill. (The steps are taken from
// StartWorker on; Run waits.) Run returns once every window of the schedule was armed
// and healed and the workload is done: the last generation exited 0, or
// Until said so and the worker was stopped. It returns an error when a
// generation the leg did not kill exits before the schedule is done
// (ErrWorkerExited: give the worker more work than the leg's Span, or a
// Span that fits its work), when the last one exits with an error, when
// the worker makes no progress for Stall, or when ctx ends.
//
// Whether the work survived the kills is the test's to check afterwards
// (its oracle): Run proves only that the kills landed and that the
// worker resumed after each.
func (w *Worker) Run(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		scheduleDone := isClosed(w.leg.Done())
		w.mu.Lock()
		down, gen, total, moved, probeErr := w.down, w.gen, w.total, w.moved, w.probeErr
		w.mu.Unlock()
		if probeErr != nil {
			return fmt.Errorf("read the worker's progress: %w", probeErr)
		}
		if !down && !w.proc.Running() && !w.isDown() {
			// isDown again: a kill marks the worker down before its
			// signal, so a generation that died of one is never taken
			// for one that exited on its own.
			err := w.proc.Wait(ctx)
			if !scheduleDone {
				return fmt.Errorf("%w: generation %d exited (%v) after %d units of progress in all; %s",
					ErrWorkerExited, gen, exitSay(err), total, w.leg.scheduleLeft())
			}
			if err != nil {
				return fmt.Errorf("the last worker generation (%d): %w", gen, err)
			}
			return nil
		}
		if scheduleDone && !down && w.until != nil {
			ok, err := w.until(ctx)
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("ask whether the workload is done: %w", err)
			}
			if ok {
				if err := w.proc.Terminate(ctx, 5*time.Second); err != nil {
					return fmt.Errorf("stop the last worker generation (%d): %w", gen, err)
				}
				return nil
			}
		}
		if !down && time.Since(moved) > Stall {
			return fmt.Errorf("the worker (generation %d) made no progress for %v (%d units in all); %s", gen, Stall, total, w.leg.scheduleLeft())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the worker at %d units of progress: %w; %s", total, ctx.Err(), w.leg.scheduleLeft())
		case <-tick.C:
		}
	}
}

func exitSay(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// workerProcess is the Worker as the lever kills and restarts it.
type workerProcess struct{ w *Worker }

func (p workerProcess) Kill(ctx context.Context) (string, error) { return p.w.kill(ctx) }
func (p workerProcess) Start(ctx context.Context) error          { return p.w.start(ctx) }

var _ levers.Process = workerProcess{}
