package history

import (
	"context"
	"encoding/json"
	"fmt"
	"html"

	"github.com/anishathalye/porcupine"
)

// Op types and outcomes of the idempotent-request model.
const (
	// TypeRequest is a request carrying an idempotency key: key = the idempotency key;
	// input: the request (the part the service compares); output: the response (the part
	// the service promises to repeat on a replay), or "conflict".
	TypeRequest = "request"
	// TypeApplied reads from the service, bypassing the client, how many times it applied a
	// key's request: key = the idempotency key; output: the count, an integer. Read it at
	// quiescence, once per key, for the at-most-once promise to be checked.
	TypeApplied = "applied"
	// OutcomeConflict: the service refused a replay whose request differs from the first one
	// under the same key.
	OutcomeConflict = "conflict"
)

// Idempotent is the model of a service that takes an idempotency key with each request: the
// first request under a key is applied once, and every replay (the same key and request)
// answers what the first answered without applying it again. Its ops (key = the idempotency
// key):
//
//	request  input: the request; output: the response (any JSON), or "conflict" (a replay
//	         with another request than the first)
//	applied  output: how many times the service applied the key (read at quiescence)
//
// The search checks it per key: the first request to take effect decides the response,
// every later answer repeats it, "conflict" comes only for a different request, and an
// applied count is 1 once a request took effect and 0 before. A request that timed out may
// have been applied, its response unknown until a replay answers. Compare only what the
// service promises to repeat: record a response without its timestamps.
//
// The audit names the anomalies in plain words: a key applied more than once, a replay whose
// answer differs from the first answer, and an answered request the service never applied.
type Idempotent struct{}

var _ Auditor = (*Idempotent)(nil)

// NewIdempotent returns the idempotent-request model.
func NewIdempotent() *Idempotent { return &Idempotent{} }

// Name implements Model.
func (*Idempotent) Name() string { return "idempotent" }

type idemIn struct {
	applied bool // an applied-count read
	key     string
	request string // compacted JSON
}

type idemOut struct {
	res      result
	response string // compacted JSON
	count    int64
}

// Translate implements Model.
func (*Idempotent) Translate(op Op) (Translated, error) {
	if op.Key == "" {
		return Translated{}, fmt.Errorf("%w: op %d (%s) has no key: give the idempotency key", ErrInvalidHistory, op.ID, op.Type)
	}
	switch op.Type {
	case TypeApplied:
		in := idemIn{applied: true, key: op.Key}
		if op.Timeout || op.Error != "" {
			return Translated{Input: in, Output: idemOut{res: resUnknown}}, nil
		}
		var n int64
		if err := json.Unmarshal(op.Output, &n); err != nil || len(op.Output) == 0 {
			return Translated{}, badOutput(op, "the count, an integer")
		}
		return Translated{Input: in, Output: idemOut{res: resOK, count: n}}, nil
	case TypeRequest:
		req, err := canon(op.Input)
		if err != nil {
			return Translated{}, fmt.Errorf("%w: op %d (request) input: %v", ErrInvalidHistory, op.ID, err)
		}
		in := idemIn{key: op.Key, request: req}
		w, isWord := outcomeWord(op.Output)
		switch {
		case op.Timeout:
			return Translated{Input: in, Output: idemOut{res: resUnknown}}, nil
		case isWord && w == "" && op.Error != "":
			return Translated{Input: in, Output: idemOut{res: resFailed}}, nil
		case isWord && w == OutcomeConflict:
			return Translated{Input: in, Output: idemOut{res: resConflict}}, nil
		}
		resp, err := canon(op.Output)
		if err != nil || op.Error != "" {
			return Translated{}, badOutput(op, `the response, or "conflict"`)
		}
		return Translated{Input: in, Output: idemOut{res: resOK, response: resp}}, nil
	}
	return Translated{}, fmt.Errorf("%w: op %d: the idempotent model has no op type %q", ErrInvalidHistory, op.ID, op.Type)
}

// idemState is one key: applied or not, the first request, and its response once known.
type idemState struct {
	applied  bool
	request  string
	response string
	known    bool // the response is known (an ambiguous first request leaves it unknown)
}

func (*Idempotent) step(_ context.Context, s idemState, input, output any, emit func(idemState)) {
	in, out := input.(idemIn), output.(idemOut)
	if in.applied {
		want := int64(0)
		if s.applied {
			want = 1
		}
		if out.res == resUnknown || out.count == want {
			emit(s)
		}
		return
	}
	switch out.res {
	case resFailed:
		emit(s)
	case resConflict:
		if s.applied && s.request != in.request {
			emit(s)
		}
	case resOK:
		switch {
		case !s.applied:
			emit(idemState{applied: true, request: in.request, response: out.response, known: true})
		case s.request != in.request:
			// a different request under a used key must be refused
		case !s.known:
			s.response, s.known = out.response, true
			emit(s)
		case s.response == out.response:
			emit(s)
		}
	case resUnknown:
		emit(s)
		if !s.applied {
			emit(idemState{applied: true, request: in.request})
		}
	}
}

// Porcupine implements Model: one partition per key.
func (m *Idempotent) Porcupine() porcupine.Model {
	f := &family[idemState]{
		hash: func(s idemState) uint64 {
			h := hashString(s.request) ^ mix64(hashString(s.response))
			if s.applied {
				h = ^h
			}
			if s.known {
				h = mix64(h)
			}
			return h
		},
		equal:    func(a, b idemState) bool { return a == b },
		step:     m.step,
		describe: describeIdem,
	}
	pm := f.porcupine(idemState{})
	pm.Partition = partitionBy(func(in any) string { return in.(idemIn).key })
	pm.DescribeOperation = func(input, output any) string {
		in, out := input.(idemIn), output.(idemOut)
		switch {
		case in.applied && out.res == resOK:
			return html.EscapeString(fmt.Sprintf("applied(%s) → %d", in.key, out.count))
		case in.applied:
			return html.EscapeString(fmt.Sprintf("applied(%s) → no answer", in.key))
		case out.res == resOK:
			return html.EscapeString(fmt.Sprintf("request(%s, %s) → %s", in.key, in.request, out.response))
		}
		return html.EscapeString(fmt.Sprintf("request(%s, %s) → %s", in.key, in.request, out.res))
	}
	return pm
}

func describeIdem(s idemState) string {
	switch {
	case !s.applied:
		return "not applied"
	case !s.known:
		return html.EscapeString(fmt.Sprintf("applied %s, response unknown", s.request))
	}
	return html.EscapeString(fmt.Sprintf("applied %s, answered %s", s.request, s.response))
}

// Audit implements Auditor.
func (m *Idempotent) Audit(ops []Op) Audit {
	type first struct {
		op       Op
		request  string
		response string
	}
	once := newAudit("a key is applied at most once", 0)
	replay := newAudit("a replay answers what the first request answered", 0)
	firsts := map[string]first{}
	answered := map[string]Op{}
	for _, i := range sortedByInvoke(ops) {
		op := ops[i]
		t, err := m.Translate(op)
		if err != nil {
			continue
		}
		in, out := t.Input.(idemIn), t.Output.(idemOut)
		if out.res != resOK {
			continue
		}
		if in.applied {
			once.prop.Checked++
			switch {
			case out.count > 1:
				once.found(fmt.Sprintf("applied more than once: key %s was applied %d times (read by %s at %s)", in.key, out.count, op.Process, at(op.Invoke)), op.ID)
			case out.count == 0:
				if a, ok := answered[in.key]; ok {
					once.found(fmt.Sprintf("answered but not applied: %s's request under key %s was answered %s at %s, yet the service applied it 0 times (read at %s)",
						a.Process, in.key, string(a.Output), at(gaveUp(a)), at(op.Invoke)), a.ID, op.ID)
				}
			}
			continue
		}
		replay.prop.Checked++
		if _, ok := answered[in.key]; !ok {
			answered[in.key] = op
		}
		f, ok := firsts[in.key]
		if !ok {
			firsts[in.key] = first{op: op, request: in.request, response: out.response}
			continue
		}
		if f.request == in.request && f.response != out.response {
			replay.found(fmt.Sprintf("replay answered differently: %s's replay of key %s at %s answered %s, but the first answer (%s at %s) was %s",
				op.Process, in.key, opSpan(op), out.response, f.op.Process, opSpan(f.op), f.response), op.ID, f.op.ID)
		}
	}
	if once.prop.Checked == 0 {
		once.unknown("no applied op read the service's count: read each key's count at quiescence (type applied)")
	}
	var a Audit
	a.add(once)
	a.add(replay)
	return a
}
