package leasetable_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/internal/faultlayer/lease"
)

// Environment of the holder process.
const (
	envDSN = "LEASE_HOLDER_DSN"
	envLog = "LEASE_HOLDER_LOG"
	envGen = "LEASE_HOLDER_GEN"
	// envFinal marks the generation that finishes: it releases its lease and exits 0; every
	// earlier one holds its lease until it is killed.
	envFinal = "LEASE_HOLDER_FINAL"
)

// logLine is one line of the holder's op log. A killed holder leaves an invoke without its
// complete: an op whose outcome is unknown. Each line is one write(2) on an O_APPEND file, so
// a SIGKILL cannot leave half of one.
type logLine struct {
	Gen     int               `json:"gen"`
	Seq     int               `json:"seq"`
	Phase   string            `json:"phase"` // invoke, complete, or reclaim (both at once)
	Mono    int64             `json:"mono"`  // CLOCK_MONOTONIC ns
	Invoke  int64             `json:"invoke,omitempty"`
	Type    string            `json:"type,omitempty"`
	Input   *history.LeaseRef `json:"input,omitempty"`
	Output  json.RawMessage   `json:"output,omitempty"`
	Error   string            `json:"error,omitempty"`
	Timeout bool              `json:"timeout,omitempty"`
}

// holderProcess is a lease holder in a process of its own. Every generation but the first
// resumes: it reclaims what dead owners left (the killed generation's lease) and tries the
// dead lease's epoch once more with a renew and a release, which must both be fenced. Then
// it acquires a port; the final generation releases it and exits 0, the others renew it until
// they are killed.
func holderProcess(ctx context.Context) int {
	gen, _ := strconv.Atoi(os.Getenv(envGen))
	f, err := os.OpenFile(os.Getenv(envLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer f.Close()
	pool, err := pgxpool.New(ctx, os.Getenv(envDSN))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer pool.Close()
	h := &holderLog{f: f, gen: gen}
	table := lease.New(pool, ports, nil)

	if gen > 1 {
		dead, err := readLog(os.Getenv(envLog))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		t0 := monoNow()
		freed, err := table.Reclaim(ctx)
		t1 := monoNow()
		if err != nil {
			fmt.Fprintf(os.Stderr, "reclaim: %v\n", err)
			return 1
		}
		for _, l := range freed {
			h.write(logLine{Phase: "reclaim", Invoke: t0, Mono: t1, Type: history.TypeReclaim,
				Input: &history.LeaseRef{Port: l.Port, Epoch: l.Epoch}, Output: json.RawMessage(`"ok"`)})
		}
		for _, l := range dead.held(gen - 1) {
			h.op(history.TypeRenew, l, func() (any, error) { _, err := table.Renew(ctx, l); return history.OutcomeOK, err })
			h.op(history.TypeRelease, l, func() (any, error) { _, err := release(table, ctx, l); return history.OutcomeOK, err })
		}
	}
	holder := fmt.Sprintf("holder-gen%d", gen)
	var l lease.Lease
	if err := h.op(history.TypeAcquire, lease.Lease{Holder: holder}, func() (any, error) {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		l, err = table.Acquire(actx, holder)
		return history.Acquired{Port: l.Port, Epoch: l.Epoch, Reclaimed: l.Reclaimed != ""}, err
	}); err != nil {
		fmt.Fprintf(os.Stderr, "acquire: %v\n", err)
		return 1
	}
	fmt.Printf("holding port %d epoch %d\n", l.Port, l.Epoch)
	if os.Getenv(envFinal) == "" {
		for ctx.Err() == nil { // until killed
			time.Sleep(50 * time.Millisecond)
			h.op(history.TypeRenew, l, func() (any, error) { _, err := table.Renew(ctx, l); return history.OutcomeOK, err })
		}
		return 1
	}
	if err := h.op(history.TypeRelease, l, func() (any, error) { _, err := release(table, ctx, l); return history.OutcomeOK, err }); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		return 1
	}
	return 0
}

type holderLog struct {
	f   *os.File
	gen int
	seq int
}

func (h *holderLog) write(l logLine) {
	l.Gen = h.gen
	b, _ := json.Marshal(l)
	h.f.Write(append(b, '\n'))
}

// op logs one lease op around do: its invoke, then its outcome (ok, fenced, or the error).
func (h *holderLog) op(typ string, l lease.Lease, do func() (any, error)) error {
	h.seq++
	ref := &history.LeaseRef{Port: l.Port, Epoch: l.Epoch, Holder: l.Holder}
	if typ == history.TypeAcquire {
		ref = &history.LeaseRef{Holder: l.Holder}
	}
	h.write(logLine{Seq: h.seq, Phase: "invoke", Mono: monoNow(), Type: typ, Input: ref})
	out, err := do()
	done := logLine{Seq: h.seq, Phase: "complete"}
	switch {
	case err == nil:
		done.Output, _ = json.Marshal(out)
	case errors.Is(err, lease.ErrFenced):
		done.Output = json.RawMessage(`"fenced"`)
	case definite(err) && !errors.Is(err, lease.ErrExhausted):
		done.Error = err.Error()
	default:
		done.Error, done.Timeout = err.Error(), true
	}
	done.Mono = monoNow()
	h.write(done)
	if errors.Is(err, lease.ErrFenced) {
		return nil
	}
	return err
}

// holderHistory is a holder log read back.
type holderHistory []logLine

func readLog(path string) (holderHistory, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read holder log: %w", err)
	}
	defer f.Close()
	var out holderHistory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("read holder log: %q: %w", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// held returns the leases generation gen's acquires were answered with.
func (hh holderHistory) held(gen int) []lease.Lease {
	invokes := map[int]logLine{}
	var out []lease.Lease
	for _, l := range hh {
		if l.Gen != gen {
			continue
		}
		switch l.Phase {
		case "invoke":
			invokes[l.Seq] = l
		case "complete":
			in := invokes[l.Seq]
			var a history.Acquired
			if in.Type == history.TypeAcquire && json.Unmarshal(l.Output, &a) == nil && a.Port > 0 {
				out = append(out, lease.Lease{Port: a.Port, Epoch: a.Epoch, Holder: in.Input.Holder})
			}
		}
	}
	return out
}

// ops turns the log into history ops on the recorder's clock (see crossClock): one process
// per generation, and one per reclaimed lease (a Reclaim call frees several leases at once,
// and a process must be sequential).
func (hh holderHistory) ops(clock crossClock) ([]history.Op, error) {
	type pending struct {
		op   history.Op
		done bool
	}
	byKey := map[[2]int]*pending{}
	var order [][2]int
	var out []history.Op
	reclaims := 0
	for _, l := range hh {
		proc := fmt.Sprintf("holder-gen%d", l.Gen)
		switch l.Phase {
		case "reclaim":
			reclaims++
			in, _ := json.Marshal(l.Input)
			out = append(out, history.Op{Process: fmt.Sprintf("%s-reclaim-%d", proc, reclaims), Type: l.Type, Key: strconv.Itoa(l.Input.Port),
				Invoke: clock.invoke(l.Invoke), Complete: history.At(clock.complete(l.Mono)), Input: in, Output: l.Output})
		case "invoke":
			in, _ := json.Marshal(l.Input)
			k := [2]int{l.Gen, l.Seq}
			key := ""
			if l.Input.Port > 0 {
				key = strconv.Itoa(l.Input.Port)
			}
			byKey[k] = &pending{op: history.Op{Process: proc, Type: l.Type, Key: key, Invoke: clock.invoke(l.Mono), Input: in}}
			order = append(order, k)
		case "complete":
			p := byKey[[2]int{l.Gen, l.Seq}]
			if p == nil {
				return nil, fmt.Errorf("holder log: generation %d op %d completes without an invoke", l.Gen, l.Seq)
			}
			p.done = true
			p.op.Complete = history.At(clock.complete(l.Mono))
			p.op.Output, p.op.Error, p.op.Timeout = l.Output, l.Error, l.Timeout
			if p.op.Timeout {
				p.op.Output = nil
			}
		}
	}
	for _, k := range order {
		p := byKey[k]
		if !p.done { // killed before the answer came: unknown outcome
			p.op.Timeout, p.op.Error = true, "no answer: the holder was killed"
		}
		out = append(out, p.op)
	}
	return out, nil
}

// leaseCrash kills a holder process that renews its lease, restarts it, and checks that the
// restarted generation reclaims the dead lease (its owner process is gone), that the dead
// epoch is fenced, and that two in-process clients cycling on the other ports never see a
// port held twice.
func leaseCrash(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "faultlayer.lease", contested.CrashAndResume, contested.Span(100))
	dsn := leg.DirectDSN()
	migrate(t, dsn)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rec := history.NewRecorder(time.Now())
	clock := newCrossClock(rec.Now, monoNow)
	logPath := filepath.Join(t.TempDir(), "holder.jsonl")

	runCtx, stop := context.WithCancel(ctx)
	clients := make([]*client, 2)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = &client{table: lease.New(pool, ports, nil), rec: rec, proc: fmt.Sprintf("c%d", i)}
		wg.Add(1)
		go func() { defer wg.Done(); clients[i].run(runCtx) }()
	}

	// One kill per window of the schedule (more at higher levels, and at level 3 right after
	// a restart), each on the step the window names: the steps are polls while the current
	// generation holds its lease, so a kill always lands on a holder that renews.
	kills := len(leg.Schedule().Windows)
	var gen atomic.Int32
	w := leg.StartWorker(func() *exec.Cmd {
		g := gen.Add(1)
		env := []string{envDSN + "=" + dsn, envLog + "=" + logPath, envGen + "=" + strconv.Itoa(int(g))}
		if int(g) > kills {
			env = append(env, envFinal+"=1")
		}
		cmd := contested.TestBinary("lease-holder")()
		cmd.Env = append(cmd.Env, env...)
		return cmd
	})
	var epoch string
	var restarted atomic.Bool
	leg.OnArm(func(context.Context, contested.Window) { epoch = rec.BeginFault("crash-and-resume") })
	leg.OnHeal(func(context.Context, contested.Window) {
		if err := rec.EndFault(epoch); err != nil {
			t.Error(err)
		}
		restarted.Store(true)
	})
	for deadline := time.Now().Add(2 * time.Minute); !scheduleDone(leg) || restarted.Load(); {
		if time.Now().After(deadline) {
			t.Fatalf("the schedule %s was not done within 2 minutes", leg.Schedule())
		}
		switch {
		case restarted.Load():
			// Victim-side proof of the last fault: the restarted generation reclaimed the
			// killed one's lease, was fenced on its epoch, and holds a lease of its own.
			g := int(gen.Load())
			if err := waitHolding(ctx, logPath, g, w); err != nil {
				t.Fatal(err)
			}
			hh, err := readLog(logPath)
			if err != nil {
				t.Fatal(err)
			}
			ops, err := hh.ops(clock)
			if err != nil {
				t.Fatal(err)
			}
			if proof := resumed(ops, hh.held(g-1), g); proof != "" {
				leg.Note(proof)
			} else {
				t.Errorf("generation %d did not reclaim and fence the killed generation's lease %+v; holder log:\n%s", g, hh.held(g-1), dump(hh))
			}
			restarted.Store(false)
		case !leg.Armed():
			if err := waitHolding(ctx, logPath, int(gen.Load()), w); err != nil {
				t.Fatal(err)
			}
			leg.Step(ctx) // SIGKILL on the window's step; the schedule restarts it after its delay
		}
		time.Sleep(10 * time.Millisecond)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = w.Wait(wctx)
	cancel()
	if err != nil {
		t.Fatalf("the final holder generation: %v", err)
	}
	stop()
	wg.Wait()
	for _, c := range clients {
		if err := errors.Join(c.errs...); err != nil {
			t.Errorf("the history is invalid (a recorder bug, not a verdict): %v", err)
		}
	}
	hh, err := readLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := hh.ops(clock)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if err := rec.Record(op); err != nil {
			t.Fatal(err)
		}
	}
	judge(t, dsn, rec, nil, leg)
}

// waitHolding waits until generation gen logged a completed acquire.
func waitHolding(ctx context.Context, path string, gen int, w *contested.Worker) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		hh, err := readLog(path)
		if err != nil {
			return err
		}
		if len(hh.held(gen)) > 0 {
			return nil
		}
		if !w.Running() {
			return fmt.Errorf("holder generation %d exited before it held a lease; log:\n%s", gen, dump(hh))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("holder generation %d holds no lease: %w", gen, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// resumed returns the evidence that generation gen reclaimed the killed leases and was
// fenced on them, or "" if the log does not show it.
func resumed(ops []history.Op, killed []lease.Lease, gen int) string {
	if len(killed) == 0 {
		return ""
	}
	proc := fmt.Sprintf("holder-gen%d", gen)
	var proof []string
	for _, l := range killed {
		var reclaimed, renewFenced, releaseFenced bool
		for _, op := range ops {
			var ref history.LeaseRef
			_ = json.Unmarshal(op.Input, &ref)
			if ref.Port != l.Port || ref.Epoch != l.Epoch {
				continue
			}
			out := strings.Trim(string(op.Output), `"`)
			switch {
			case op.Type == history.TypeReclaim && strings.HasPrefix(op.Process, proc) && out == history.OutcomeOK:
				reclaimed = true
			case op.Process == proc && op.Type == history.TypeRenew && out == history.OutcomeFenced:
				renewFenced = true
			case op.Process == proc && op.Type == history.TypeRelease && out == history.OutcomeFenced:
				releaseFenced = true
			}
		}
		if !reclaimed || !renewFenced || !releaseFenced {
			return ""
		}
		proof = append(proof, fmt.Sprintf("port %d epoch %d", l.Port, l.Epoch))
	}
	return fmt.Sprintf("restarted holder (generation %d) reclaimed the killed generation's lease (%s) and was fenced on its epoch", gen, strings.Join(proof, ", "))
}

func dump(hh holderHistory) string {
	var b strings.Builder
	for _, l := range hh {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
