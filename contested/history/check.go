package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultdir"
)

// Verdict is the outcome of a linearizability check.
type Verdict string

const (
	// Ok: porcupine linearized every op it was given.
	Ok Verdict = "Ok"
	// Illegal: no order of the ops is both consistent with their real-time order and legal for
	// the model. The service broke its promise (or the model is wrong).
	Illegal Verdict = "Illegal"
	// Unknown: the check stopped (time budget spent, context ended, or the history could not
	// be checked) before deciding. Never green: an undecided check proves nothing.
	Unknown Verdict = "Unknown"
)

// DefaultTimeout is porcupine's time budget when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// Options tunes Check.
type Options struct {
	// Timeout bounds porcupine's search; 0 means DefaultTimeout. A deadline on the context
	// passed to Check shortens it. Running out gives Unknown, never a hang.
	Timeout time.Duration
	// Expected is the number of ops the workload produced (Recorder.Issued), when known. A
	// history with a different number of ops is refused with ErrTruncated.
	Expected int
	// VisualizeDir is where porcupine's HTML visualization is written when the verdict is
	// Illegal or Unknown (and on Ok too with VisualizeAlways). Empty: never written.
	VisualizeDir string
	// Name is the visualization's file name without extension, e.g. the test name; it is
	// made safe for a file name. Empty: the model's name.
	Name string
	// VisualizeAlways writes the visualization on Ok as well.
	VisualizeAlways bool
	// Faults are drawn on the visualization, one row per fault name ("fault:<name>").
	Faults []FaultWindow
}

// Result is what Check found, with the evidence to cite next to the verdict.
type Result struct {
	Model   string  // the model's name
	Verdict Verdict // Ok, Illegal or Unknown; Unknown is never green
	// OpsProduced is the number of ops in the history. OpsChecked is the number porcupine's
	// partitions held; it must equal OpsProduced, and Green is false otherwise: every op is
	// checked, none is left out.
	OpsProduced int
	OpsChecked  int
	// Unanswered counts the reads among them that got no answer (failed or timed out). They
	// are checked like every op; having observed nothing, each is legal in every state.
	Unanswered int
	Ambiguous  int           // ops checked with an unknown outcome (Return = math.MaxInt64)
	Partitions int           // independent sub-histories porcupine checked
	Took       time.Duration // how long the check took
	// Visualization is the path of the HTML visualization, or "" if none was written.
	Visualization string
	// Clients maps porcupine's client ids, as shown in the visualization, to the history's
	// processes. A process that had an ambiguous op continues under a new client id, because
	// porcupine draws each client id as one sequential lane and the ambiguous op never ends.
	Clients []string
	// Properties are the promises the check covered, each with its own verdict: the
	// linearizability search (for a model that has one) and an Auditor's real-time promises.
	Properties []Property
	// Anomalies say, in plain words and with the ops involved, why the verdict is Illegal:
	// what an Auditor found, or, when only the search found the history illegal, the op it
	// could not place after the longest legal order.
	Anomalies []Anomaly
}

// Green reports whether the result is a pass: the verdict is Ok, at least one op was checked,
// and every op of the history was checked. Unknown is never green.
func (r Result) Green() bool {
	return r.Verdict == Ok && r.OpsChecked > 0 && r.OpsChecked == r.OpsProduced
}

// String is the one-line evidence: verdict and counts.
func (r Result) String() string {
	s := fmt.Sprintf("%s (%s): %s; %d ops produced, %d checked (%d unanswered reads among them), %d ambiguous, %d partitions, took %s",
		r.kind(), r.Model, r.Verdict, r.OpsProduced, r.OpsChecked, r.Unanswered, r.Ambiguous, r.Partitions, r.Took.Round(time.Millisecond))
	if r.Verdict == Ok && !r.Green() {
		s += "; NOT green: no ops or not every op checked"
	}
	for _, p := range r.Properties {
		if p.Verdict == Unknown {
			s += fmt.Sprintf("; %s undecided: %s", p.Name, p.Note)
		}
	}
	if n := len(r.Anomalies); n > 0 {
		s += "; " + r.Anomalies[0].Text
		if n > 1 {
			s += fmt.Sprintf(" (and %d more anomalies)", n-1)
		}
	}
	if r.Visualization != "" {
		s += "; visualization " + r.Visualization
	}
	return s
}

// opMeta is what the visualization shows for an op besides its description.
type opMeta struct {
	id        int64
	process   string
	epoch     string
	err       string
	ambiguous bool
}

func describeMeta(info any) string {
	m, ok := info.(opMeta)
	if !ok {
		return ""
	}
	s := fmt.Sprintf("op %d, process %s", m.id, m.process)
	if m.epoch != "" {
		s += ", fault " + m.epoch
	}
	if m.ambiguous {
		s += ", AMBIGUOUS (may take effect any time after invoke)"
	}
	if m.err != "" {
		s += ", error: " + m.err
	}
	return html.EscapeString(s)
}

// Check holds ops against m and says whether they are linearizable.
//
// It validates the history first (see Validate); a history that breaks the record's rules is
// returned as an error wrapping ErrInvalidHistory with verdict Unknown. Every op is checked,
// failed and timed-out reads included (they observed nothing, so the models accept them in
// every state, but they are part of the history and the count). An ambiguous op (timeout) gets Return =
// math.MaxInt64: it may take effect at any time after its invoke, or never, which is exactly
// what is known about it.
//
// When ctx ends during the check, the verdict is Unknown and the error is ctx's. The error is
// also set when the visualization cannot be written; the verdict stands then.
func Check(ctx context.Context, m Model, ops []Op, opts Options) (res Result, err error) {
	start := time.Now()
	res = Result{Model: m.Name(), Verdict: Unknown, OpsProduced: len(ops)}
	defer func() { res.Took = time.Since(start) }()

	if opts.Expected > 0 && len(ops) != opts.Expected {
		return res, fmt.Errorf("%w: the workload produced %d ops, the history holds %d", ErrTruncated, opts.Expected, len(ops))
	}
	if err := Validate(ops); err != nil {
		return res, err
	}
	pops, clients, err := convert(m, ops, &res)
	if err != nil {
		return res, err
	}
	res.Clients = clients

	budget := opts.Timeout
	if budget <= 0 {
		budget = DefaultTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	if err := ctx.Err(); err != nil || budget <= 0 {
		return res, fmt.Errorf("check %s history: no time left: %w", m.Name(), errors.Join(err, context.DeadlineExceeded))
	}

	base := m.Porcupine()
	search := base.Init != nil
	if !search {
		base = drawOnly(base)
	}
	pm, canceled, partitioned := guard(ctx, base)
	visualize := opts.VisualizeDir != ""
	var verdict porcupine.CheckResult
	var info porcupine.LinearizationInfo
	if visualize {
		// Verbose waits for every partition and keeps partial linearizations; pay for it
		// only when a visualization may be wanted.
		verdict, info = porcupine.CheckOperationsVerbose(pm, pops, budget)
	} else {
		verdict = porcupine.CheckOperationsTimeout(pm, pops, budget)
	}
	res.Verdict = Verdict(verdict)
	res.OpsChecked, res.Partitions = int(partitioned.ops.Load()), int(partitioned.parts.Load())

	switch {
	case canceled.Load():
		// Steps were refused because ctx ended; whatever porcupine concluded is void.
		res.Verdict = Unknown
		err = fmt.Errorf("check %s history interrupted: %w", m.Name(), context.Cause(ctx))
	case res.OpsChecked != len(pops):
		res.Verdict = Unknown
		err = fmt.Errorf("%w: the %s model's partitions hold %d ops, %d were handed to it", ErrTruncated, m.Name(), res.OpsChecked, len(pops))
	case res.Verdict == Ok && visualize && linearized(info) != len(pops):
		res.Verdict = Unknown
		err = fmt.Errorf("%w: porcupine's linearization covers %d of %d ops", ErrTruncated, linearized(info), len(pops))
	}
	if search {
		res.Properties = append(res.Properties, Property{Name: propLinearizable, Kind: KindSearch, Verdict: res.Verdict, Checked: res.OpsChecked})
		if res.Verdict == Illegal {
			if !visualize {
				// The fast check keeps no linearizations; the explanation needs them.
				_, info = porcupine.CheckOperationsVerbose(pm, pops, budget)
			}
			res.Anomalies = explainIllegal(pm, info, pops, ops)
		}
	}
	if a, ok := m.(Auditor); ok && err == nil {
		audit := a.Audit(ops)
		res.Properties = append(res.Properties, audit.Properties...)
		if len(audit.Anomalies) > 0 {
			// An audit's anomaly is a proof: it names the broken promise better than the
			// search's longest legal order, so it comes first.
			res.Anomalies = append(audit.Anomalies, res.Anomalies...)
		}
		res.Verdict = combine(res.Verdict, search, audit)
	}

	if visualize && (res.Verdict != Ok || opts.VisualizeAlways) {
		info.AddAnnotations(faultAnnotations(opts.Faults, ops))
		info.AddAnnotations(anomalyAnnotations(res.Anomalies, ops))
		path, verr := writeVisualization(pm, info, opts.VisualizeDir, fileName(opts.Name, m.Name()))
		res.Visualization = path
		err = errors.Join(err, verr)
	}
	return res, err
}

// combine is the verdict of a search (searched: whether the model has one; otherwise v is
// only the drawing's) and an audit: any anomaly is Illegal, an undecided property or search
// is Unknown, and Ok needs both.
func combine(v Verdict, searched bool, a Audit) Verdict {
	if len(a.Anomalies) > 0 || (searched && v == Illegal) {
		return Illegal
	}
	if searched && v != Ok {
		return v
	}
	for _, p := range a.Properties {
		if p.Verdict != Ok {
			return Unknown
		}
	}
	return Ok
}

// drawOnly is the porcupine model of a model without a search: every op is legal in its one
// state, so porcupine only lays the history out for the visualization.
func drawOnly(pm porcupine.Model) porcupine.Model {
	describe := pm.DescribeOperation
	return porcupine.Model{
		Partition:         pm.Partition,
		Init:              func() any { return struct{}{} },
		Step:              func(s, _, _ any) (bool, any) { return true, s },
		Equal:             func(a, b any) bool { return true },
		DescribeOperation: describe,
		DescribeState:     func(any) string { return "(no sequential state: this model's promises are checked by real-time scans)" },
	}
}

// kind says how the result was reached, for its one-line evidence.
func (r Result) kind() string {
	search, scan := false, false
	for _, p := range r.Properties {
		search = search || p.Kind == KindSearch
		scan = scan || p.Kind == KindRealTime
	}
	switch {
	case scan && search:
		return "linearizability and real-time checks"
	case scan:
		return "real-time checks"
	}
	return "linearizability"
}

// convert turns the history into porcupine ops, in invoke order, with client ids assigned so
// that each id is sequential: a process gets a fresh id after an ambiguous op.
func convert(m Model, ops []Op, res *Result) ([]porcupine.Operation, []string, error) {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case ops[a].Invoke != ops[b].Invoke:
			return cmpInt(ops[a].Invoke, ops[b].Invoke)
		default:
			return cmpInt(ops[a].ID, ops[b].ID)
		}
	})
	lane := make(map[string]int) // process → current client id
	fresh := make(map[string]bool)
	var clients []string
	pops := make([]porcupine.Operation, 0, len(ops))
	for _, i := range idx {
		op := ops[i]
		t, err := m.Translate(op)
		if err != nil {
			return nil, nil, err
		}
		if (op.Type == TypeRead || op.Type == TypeBalances) && (op.Timeout || op.Error != "") {
			res.Unanswered++
		}
		id, ok := lane[op.Process]
		if !ok || fresh[op.Process] {
			id = len(clients)
			name := op.Process
			if ok {
				name = fmt.Sprintf("%s (after op %d)", op.Process, lastAmbiguous(ops, idx, op))
			}
			clients = append(clients, name)
			lane[op.Process], fresh[op.Process] = id, false
		}
		ret := int64(math.MaxInt64)
		if !op.Timeout {
			ret = *op.Complete
		} else {
			res.Ambiguous++
			fresh[op.Process] = true
		}
		pops = append(pops, porcupine.Operation{
			ClientId: id, Input: t.Input, Output: t.Output, Call: op.Invoke, Return: ret,
			Metadata: opMeta{id: op.ID, process: op.Process, epoch: op.FaultEpoch, err: op.Error, ambiguous: op.Timeout},
		})
	}
	return pops, clients, nil
}

// lastAmbiguous finds the id of the ambiguous op of op's process that precedes op, for naming
// the new lane.
func lastAmbiguous(ops []Op, idx []int, op Op) int64 {
	var last int64
	for _, i := range idx {
		o := &ops[i]
		if o.ID == op.ID {
			break
		}
		if o.Process == op.Process && o.Timeout {
			last = o.ID
		}
	}
	return last
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type partitionCount struct{ ops, parts atomic.Int64 }

// guard wraps the model so that (1) the caller's ctx can stop the search: once it ends every
// step is refused and canceled is set, which voids the verdict; and (2) the ops across the
// partitions are counted, so a partition function that loses ops cannot make a truncated
// history pass. The replay for the visualization uses the unguarded step.
func guard(ctx context.Context, pm porcupine.Model) (porcupine.Model, *atomic.Bool, *partitionCount) {
	canceled := new(atomic.Bool)
	count := new(partitionCount)
	step := pm.StepContext
	if step == nil {
		plain := pm.Step
		step = func(_ context.Context, s, in, out any) (bool, any) { return plain(s, in, out) }
	}
	pm.StepContext = func(pctx context.Context, s, in, out any) (bool, any) {
		if ctx.Err() != nil {
			canceled.Store(true)
			return false, s
		}
		return step(pctx, s, in, out)
	}
	pm.Step = func(s, in, out any) (bool, any) { return step(context.Background(), s, in, out) }
	part := pm.Partition
	if part == nil {
		part = func(h []porcupine.Operation) [][]porcupine.Operation { return [][]porcupine.Operation{h} }
	}
	pm.Partition = func(h []porcupine.Operation) [][]porcupine.Operation {
		ps := part(h)
		n := 0
		for _, p := range ps {
			n += len(p)
		}
		count.ops.Store(int64(n))
		count.parts.Store(int64(len(ps)))
		return ps
	}
	pm.DescribeOperationMetadata = describeMeta
	return pm, canceled, count
}

// linearized counts the ops in the longest linearization of each partition.
func linearized(info porcupine.LinearizationInfo) int {
	n := 0
	for _, part := range info.PartialLinearizations() {
		best := 0
		for _, l := range part {
			best = max(best, len(l))
		}
		n += best
	}
	return n
}

// faultColors are the background colours of fault rows, one per fault name in order of
// appearance.
var faultColors = []string{"#efaefc", "#ffd59e", "#aee6fc", "#c5f5b0", "#fcaeae", "#e0d4ff"}

// faultAnnotations draws one annotation per fault window, on a row per fault name. A window
// still open ends at the last time in the history.
func faultAnnotations(faults []FaultWindow, ops []Op) []porcupine.Annotation {
	var horizon int64
	for _, op := range ops {
		horizon = max(horizon, op.Invoke)
		if op.Complete != nil {
			horizon = max(horizon, *op.Complete)
		}
	}
	color := make(map[string]string)
	out := make([]porcupine.Annotation, 0, len(faults))
	for _, f := range faults {
		c, ok := color[f.Name]
		if !ok {
			c = faultColors[len(color)%len(faultColors)]
			color[f.Name] = c
		}
		end, state := horizon, "still open at the end of the history"
		if f.End != nil {
			end, state = *f.End, fmt.Sprintf("%s long", time.Duration(*f.End-f.Start))
		}
		out = append(out, porcupine.Annotation{
			Tag:             "fault:" + f.Name,
			Start:           f.Start,
			End:             end,
			Description:     html.EscapeString(f.Epoch),
			Details:         html.EscapeString(fmt.Sprintf("fault window %s (%s), %s; ops invoked inside carry fault_epoch %q", f.Epoch, f.Name, state, f.Epoch)),
			BackgroundColor: c,
		})
	}
	return out
}

// FileStem is the file name, without extension, under which the history of
// the check called name (the model's name when empty) is saved: the one
// sanitizer's (faultdir.SafeName), with dots trimmed so that an
// extension joins cleanly (it never starts with one, so the stem is never
// empty).
func FileStem(name, model string) string {
	if name == "" {
		name = model
	}
	return strings.TrimRight(faultdir.SafeName(name), ".")
}

// fileName is the visualization's file name.
func fileName(name, model string) string { return FileStem(name, model) + ".html" }

// writeVisualization writes porcupine's HTML into dir/name atomically (the
// one atomic writer, internal/atomicfile), so a reader never sees half a
// file.
func writeVisualization(pm porcupine.Model, info porcupine.LinearizationInfo, dir, name string) (string, error) {
	var b bytes.Buffer
	path := filepath.Join(dir, name)
	if err := porcupine.Visualize(pm, info, &b); err != nil {
		return "", fmt.Errorf("write visualization %s: %w", path, err)
	}
	if err := atomicfile.Write(path, b.Bytes()); err != nil {
		return "", fmt.Errorf("write visualization: %w", err)
	}
	return path, nil
}
