package contested

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// History is the leg's history recorder: record every operation of the
// workload with it (Invoke, then Complete or Ambiguous), and Check holds
// it against a model. Its fault windows follow the leg's: each window the
// schedule arms opens one, named for the lever, and its heal closes it, so
// every op carries the fault it ran in.
func (l *Leg) History() *history.Recorder {
	l.drive.mu.Lock()
	defer l.drive.mu.Unlock()
	if l.hist != nil {
		return l.hist
	}
	rec := history.NewRecorder(time.Time{})
	l.hist = rec
	var open []string
	l.drive.onArm = append(l.drive.onArm, func(context.Context, levers.Window) { open = append(open, rec.BeginFault(string(l.lever))) })
	l.drive.onHeal = append(l.drive.onHeal, func(context.Context, levers.Window) {
		if len(open) > 0 {
			if err := rec.EndFault(open[0]); err != nil {
				l.t.Errorf("contested: %v", err)
			}
			open = open[1:]
		}
	})
	return rec
}

// HistoryDir is where a check that is not Ok leaves its evidence, under
// the results directory: porcupine's visualization (<test>.html), the
// history (<test>.history.jsonl) and its fault windows
// (<test>.faults.jsonl).
const HistoryDir = "linearizability"

// CheckOption tunes Check.
type CheckOption func(*checkOptions)

type checkOptions struct {
	timeout time.Duration
	ops     func([]history.Op) []history.Op
}

// defaultCheckTimeout bounds porcupine's search when CheckTimeout does not.
const defaultCheckTimeout = time.Minute

// CheckTimeout bounds porcupine's search (default one minute); a search
// that runs out is Unknown, never green.
func CheckTimeout(d time.Duration) CheckOption { return func(o *checkOptions) { o.timeout = d } }

// CheckOps has Check hold derive(ops) instead of the recorded ops: a
// history the test settled with what the service says at rest. The
// recorded history is kept as it is.
func CheckOps(derive func([]history.Op) []history.Op) CheckOption {
	return func(o *checkOptions) { o.ops = derive }
}

// Check holds the leg's history (History) against model m, the one way a
// contract judges what its clients saw: it reports the verdict as the
// leg's oracle named for the model (held when Ok and every op was checked,
// unknown when Unknown, violated when Illegal), logs the evidence, and
// fails the test when it is not green, naming every anomaly in plain
// words. When the verdict is not Ok it leaves porcupine's visualization,
// the history and its fault windows under the results directory
// (HistoryDir) and names them.
func (l *Leg) Check(ctx context.Context, m history.Model, opts ...CheckOption) history.Result {
	l.t.Helper()
	o := checkOptions{timeout: defaultCheckTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	rec := l.History()
	ops := rec.Ops()
	if o.ops != nil {
		ops = o.ops(ops)
	}
	dir := ""
	if env, err := processEnv(); err == nil {
		dir = env.ResultsDir.Join(HistoryDir)
	}
	res, err := history.Check(ctx, m, ops, history.Options{
		Timeout: o.timeout, Expected: len(ops), VisualizeDir: dir, Name: l.t.Name(), Faults: rec.Faults(),
	})
	if o.ops == nil && len(ops) != rec.Issued() {
		err = errors.Join(err, fmt.Errorf("%w: the workload issued %d ops, the history holds %d", history.ErrTruncated, rec.Issued(), len(ops)))
	}
	saved := ""
	if res.Verdict != history.Ok && dir != "" {
		path, serr := SaveHistory(dir, l.t.Name(), ops, rec.Faults())
		saved, err = path, errors.Join(err, serr)
	}
	var verdict error
	switch {
	case res.Green() && err == nil:
	case res.Verdict == history.Illegal:
		verdict = fmt.Errorf("%s: %d anomalies", m.Name(), len(res.Anomalies))
	default:
		verdict = fmt.Errorf("%w: %s: %s", ErrInconclusive, m.Name(), errors.Join(err, errors.New(res.String())))
	}
	l.Oracle(m.Name(), res.OpsProduced, res.OpsChecked, verdict)
	if verdict == nil {
		l.t.Logf("oracle %s: held [%s]", m.Name(), res)
		return res
	}
	var b strings.Builder
	fmt.Fprintf(&b, "oracle %s: ", m.Name())
	if res.Verdict == history.Illegal {
		b.WriteString("VIOLATED")
	} else {
		b.WriteString("UNKNOWN (never green)")
	}
	fmt.Fprintf(&b, " [%s]", res)
	if err != nil {
		fmt.Fprintf(&b, "; %v", err)
	}
	for _, a := range res.Anomalies {
		fmt.Fprintf(&b, "\n\t%s: %s", a.Property, a.Text)
	}
	for _, p := range res.Properties {
		fmt.Fprintf(&b, "\n\tproperty %s", p)
	}
	if res.Visualization != "" {
		fmt.Fprintf(&b, "\n\tsee %s", res.Visualization)
	}
	if saved != "" {
		fmt.Fprintf(&b, "\n\thistory %s", saved)
	}
	l.t.Error(b.String())
	return res
}

// SaveHistory writes ops and their fault windows under dir as
// <name>.history.jsonl and <name>.faults.jsonl (the one atomic writer), so
// a check can be rerun offline (history.ReadJSONL), and returns the
// history's path.
func SaveHistory(dir, name string, ops []history.Op, faults []history.FaultWindow) (string, error) {
	base := filepath.Join(dir, history.FileStem(name, "history"))
	var b strings.Builder
	if err := history.WriteJSONL(&b, ops); err != nil {
		return "", fmt.Errorf("save history: %w", err)
	}
	if err := atomicfile.Write(base+".history.jsonl", []byte(b.String())); err != nil {
		return "", fmt.Errorf("save history: %w", err)
	}
	b.Reset()
	if err := history.WriteFaultsJSONL(&b, faults); err != nil {
		return "", fmt.Errorf("save fault windows: %w", err)
	}
	if err := atomicfile.Write(base+".faults.jsonl", []byte(b.String())); err != nil {
		return "", fmt.Errorf("save fault windows: %w", err)
	}
	return base + ".history.jsonl", nil
}
