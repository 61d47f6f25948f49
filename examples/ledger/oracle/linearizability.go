package oracle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/internal/runenv"
)

// VisualizationDir is where failed linearizability checks leave their evidence, under the
// results directory (CONTESTED_RESULTS_DIR): porcupine's HTML visualization
// (<name>.html), the history (<name>.history.jsonl) and its fault windows
// (<name>.faults.jsonl).
const VisualizationDir = contested.HistoryDir

// CheckLinearizable holds the ops of the given types against model through porcupine (see
// package history): Ok is the only pass; Illegal is a violation; Unknown (the check ran out
// of time) is inconclusive and never green. On anything but a pass it saves the
// visualization, with the fault windows drawn on it, and the history itself under
// ResultsDir/linearizability, and the verdict names the file.
func CheckLinearizable(ctx context.Context, model history.Model, ops []history.Op, faults []history.FaultWindow, name string, timeout time.Duration, types ...string) Verdict {
	v := Verdict{Oracle: Linearizability}
	var mine []history.Op
	for _, op := range ops {
		if len(types) == 0 || slices.Contains(types, op.Type) {
			mine = append(mine, op)
		}
	}
	v.Produced = len(mine)
	dir := ""
	if env, err := runenv.Process(); err == nil {
		dir = env.ResultsDir.Join(VisualizationDir)
	}
	res, err := history.Check(ctx, model, mine, history.Options{
		Timeout: timeout, Expected: len(mine), VisualizeDir: dir, Name: name, Faults: faults,
	})
	v.Checked = res.OpsChecked
	v.Evidence = res.String()
	v.Artifact = res.Visualization
	switch {
	case res.Green():
		return v
	case res.Verdict == history.Illegal:
		v.violate("porcupine found no linearization of %d %s ops (%d ambiguous, %d fault windows)", res.OpsChecked, model.Name(), res.Ambiguous, len(faults))
		for _, a := range res.Anomalies {
			v.violate("%s", a.Text)
		}
	case err != nil:
		v.Inconclusive = err.Error()
	default:
		v.Inconclusive = fmt.Sprintf("porcupine said %s", res.Verdict)
	}
	if dir != "" {
		if path, serr := contested.SaveHistory(dir, name, mine, faults); serr != nil {
			v.Evidence += "; saving the history failed: " + serr.Error()
		} else {
			v.Evidence += "; history " + path
		}
	}
	if v.Artifact == "" && err != nil && !errors.Is(err, history.ErrInvalidHistory) {
		v.Evidence += "; no visualization: " + err.Error()
	}
	return v
}
