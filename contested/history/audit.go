package history

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Anomaly is one broken promise found in a history: which promise, what happened in plain
// words (who did what to which object, when, on the history's clock), and the ops involved.
// Every anomaly a model reports is a proof: the ops it names cannot be explained by any
// legal behaviour, ambiguous outcomes included.
type Anomaly struct {
	// Property names the promise broken, as in Property.Name ("one holder at a time").
	Property string
	// Text says what happened: "two holders: client-2 acquired lock L at 12.31 s (token 8)
	// while client-1 held it since 12.02 s (token 7) ...".
	Text string
	// Ops are the ids of the ops involved, in the order the text names them.
	Ops []int64
}

// String is the anomaly in words: its Text.
func (a Anomaly) String() string { return a.Text }

// How a property is checked.
const (
	// KindSearch: porcupine's search for a legal sequential order (linearizability).
	KindSearch = "linearizability search"
	// KindRealTime: a scan of the ops' real-time order (invoke and complete times), for
	// promises that are about time or about the whole history rather than about a legal
	// order: a lease's time to live, a queue's delivery completeness.
	KindRealTime = "real-time scan"
)

// Property is one promise a check covered and what it found.
type Property struct {
	Name    string  // the promise: "one holder at a time", "every acknowledged enqueue is delivered"
	Kind    string  // KindSearch or KindRealTime
	Verdict Verdict // Ok, Illegal (an anomaly breaks it) or Unknown (the history cannot decide it)
	Checked int     // the ops it examined
	Note    string  // why it is Unknown, or what it assumed
}

// String is the property in words: "one holder at a time (real-time scan): Ok, 12 ops".
func (p Property) String() string {
	s := fmt.Sprintf("%s (%s): %s, %d ops", p.Name, p.Kind, p.Verdict, p.Checked)
	if p.Note != "" {
		s += "; " + p.Note
	}
	return s
}

// Auditor is a Model with promises that are not, or not only, linearizability: a lease's time
// to live, an abandoned lock acquirable again, a queue's delivery completeness, a bank's
// conservation. Check runs Audit over the whole history besides porcupine's search (or
// instead of it, for a model whose Porcupine has no Init), and an anomaly it reports makes the
// verdict Illegal whatever the search said: an audit's anomaly is a proof.
type Auditor interface {
	Model
	// Audit checks the model's real-time promises over ops, which Check has validated. It
	// lists every property it checked, with its verdict, and every anomaly it found.
	Audit(ops []Op) Audit
}

// Audit is what an Auditor found.
type Audit struct {
	Properties []Property // every promise the audit checked, with its verdict
	Anomalies  []Anomaly  // every violation found, with its ops
}

// maxAnomalies bounds how many anomalies one property reports; the first ones are the ones
// to read, and a broken promise usually breaks many times.
const maxAnomalies = 10

// audit collects the anomalies of one property and its verdict.
type audit struct {
	prop Property
	out  []Anomaly
	more int // anomalies found past maxAnomalies
}

func newAudit(name string, checked int) *audit {
	return &audit{prop: Property{Name: name, Kind: KindRealTime, Verdict: Ok, Checked: checked}}
}

// found adds an anomaly of the property.
func (a *audit) found(text string, ops ...int64) {
	a.prop.Verdict = Illegal
	if len(a.out) >= maxAnomalies {
		a.more++
		return
	}
	a.out = append(a.out, Anomaly{Property: a.prop.Name, Text: text, Ops: ops})
}

// unknown marks the property undecided, saying why, unless an anomaly already decided it.
func (a *audit) unknown(note string) {
	if a.prop.Verdict != Illegal {
		a.prop.Verdict = Unknown
	}
	a.prop.Note = note
}

// add appends the property and its anomalies to an Audit.
func (r *Audit) add(a *audit) {
	if a.more > 0 {
		a.prop.Note = strings.TrimPrefix(a.prop.Note+fmt.Sprintf("; %d more anomalies not listed", a.more), "; ")
	}
	r.Properties = append(r.Properties, a.prop)
	r.Anomalies = append(r.Anomalies, a.out...)
}

// never is the complete time of an op that has none, or whose outcome is unknown: it may take
// effect at any time after its invoke.
const never = int64(math.MaxInt64)

// done is when op certainly ended: its complete time, or never when it is ambiguous or has
// none.
func done(op Op) int64 {
	if op.Timeout || op.Complete == nil {
		return never
	}
	return *op.Complete
}

// gaveUp is when the client stopped waiting for op: its complete time, or never when it has
// none.
func gaveUp(op Op) int64 {
	if op.Complete == nil {
		return never
	}
	return *op.Complete
}

// at formats a time on the history's clock (ns since the recorder's base) for an anomaly's
// text: "12.31 s", "312.5 ms", "40 ns".
func at(ns int64) string {
	if ns == never {
		return "never"
	}
	return span(ns)
}

// span formats a duration the way at formats a time.
func span(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second || d <= -time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond || d <= -time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d >= time.Microsecond || d <= -time.Microsecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%d ns", ns)
}

// opSpan formats an op's interval: "12.02–12.05 s"-like, as "12.02 s to 12.05 s".
func opSpan(op Op) string {
	if op.Complete == nil {
		return "from " + at(op.Invoke) + ", never answered"
	}
	return at(op.Invoke) + " to " + at(*op.Complete)
}

// anomalyColor is the background of anomaly annotations in the visualization.
const anomalyColor = "#ff8a8a"

// anomalyAnnotations draws each anomaly on the visualization: one row per property, spanning
// the ops it names.
func anomalyAnnotations(anoms []Anomaly, ops []Op) []porcupine.Annotation {
	byID := make(map[int64]Op, len(ops))
	var horizon int64
	for _, op := range ops {
		byID[op.ID] = op
		horizon = max(horizon, op.Invoke, gaveUpOr(op, op.Invoke))
	}
	out := make([]porcupine.Annotation, 0, len(anoms))
	for _, a := range anoms {
		start, end := int64(math.MaxInt64), int64(0)
		for _, id := range a.Ops {
			if op, ok := byID[id]; ok {
				start = min(start, op.Invoke)
				end = max(end, gaveUpOr(op, horizon))
			}
		}
		if start > end {
			start, end = 0, horizon
		}
		out = append(out, porcupine.Annotation{
			Tag:             "anomaly: " + a.Property,
			Start:           start,
			End:             end,
			Description:     html.EscapeString(a.Property),
			Details:         html.EscapeString(a.Text),
			BackgroundColor: anomalyColor,
		})
	}
	return out
}

func gaveUpOr(op Op, otherwise int64) int64 {
	if op.Complete == nil {
		return otherwise
	}
	return *op.Complete
}

// explainIllegal names, in plain words, why porcupine found no legal order when no audit did:
// for each partition it could not linearize, the longest legal order it found, the state that
// order reached, and the op it could not place after it (the one among the rest that had to
// take effect earliest).
func explainIllegal(pm porcupine.Model, info porcupine.LinearizationInfo, pops []porcupine.Operation, ops []Op) []Anomaly {
	byID := make(map[int64]Op, len(ops))
	for _, op := range ops {
		byID[op.ID] = op
	}
	parts := pm.Partition(pops)
	lins := info.PartialLinearizationsOperations()
	var out []Anomaly
	for p, part := range parts {
		if p >= len(lins) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range lins[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue
		}
		placed := make(map[int64]bool, len(longest))
		for _, o := range longest {
			placed[metaID(o)] = true
		}
		var stuck *porcupine.Operation
		for i := range part {
			o := &part[i]
			if placed[metaID(*o)] {
				continue
			}
			if stuck == nil || o.Return < stuck.Return || (o.Return == stuck.Return && o.Call < stuck.Call) {
				stuck = o
			}
		}
		if stuck == nil {
			continue
		}
		state := pm.Init()
		for _, o := range longest {
			_, state = pm.Step(state, o.Input, o.Output)
		}
		op := byID[metaID(*stuck)]
		text := fmt.Sprintf("not linearizable: no legal order of the %d ops%s exists; the longest legal order places %d of them, leaving the state at %s, and cannot place op %d after it (%s: %s, %s)",
			len(part), keyPhrase(op.Key), len(longest), plain(pm.DescribeState(state)), op.ID, op.Process, plain(pm.DescribeOperation(stuck.Input, stuck.Output)), opSpan(op))
		ids := []int64{op.ID}
		if n := len(longest); n > 0 {
			ids = append(ids, metaID(longest[n-1]))
		}
		out = append(out, Anomaly{Property: propLinearizable, Text: text, Ops: ids})
		if len(out) == maxAnomalies {
			break
		}
	}
	if len(out) == 0 {
		out = append(out, Anomaly{Property: propLinearizable, Text: "not linearizable: porcupine found no legal order of the ops"})
	}
	return out
}

// propLinearizable names the linearizability property in results.
const propLinearizable = "linearizable"

func keyPhrase(key string) string {
	if key == "" {
		return ""
	}
	return " on " + key
}

func metaID(o porcupine.Operation) int64 {
	if m, ok := o.Metadata.(opMeta); ok {
		return m.id
	}
	return -1
}

// plain turns a model's HTML description back into text.
func plain(s string) string { return html.UnescapeString(s) }

// sortedByInvoke returns the indices of ops sorted by invoke time, then id.
func sortedByInvoke(ops []Op) []int {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := cmpInt(ops[a].Invoke, ops[b].Invoke); c != 0 {
			return c
		}
		return cmpInt(ops[a].ID, ops[b].ID)
	})
	return idx
}
