package history

import (
	"context"
	"encoding/json"
	"fmt"
	"html"

	"github.com/anishathalye/porcupine"
)

// CAS is the input of a compare-and-set: set the key to To if it holds From (null: absent).
type CAS struct {
	From json.RawMessage `json:"from"`
	To   json.RawMessage `json:"to"`
}

// Op types and outcomes of the key-value model besides read and write.
const (
	// TypeCAS is a compare-and-set: input CAS; output "ok" (set) or "mismatch" (the key held
	// another value; nothing changed).
	TypeCAS = "cas"
	// OutcomeMismatch: a compare-and-set found another value than the one it expected.
	OutcomeMismatch = "mismatch"
)

// KV is the model of a key-value store, a register per key, each linearizable: a read returns
// the value of the latest write, compare-and-set decides on the current value. Values are any
// JSON, compared byte for byte once compacted (record the part of a value the store promises
// to return unchanged). A key never written is absent, and a read of it returns null. Its ops
// (key = the key):
//
//	read   output: the value (null: absent); one that failed or timed out observed nothing
//	write  input: the new value (null deletes); output: null or "ok"
//	cas    input: CAS{From, To}; output: "ok" or "mismatch"
//
// The search checks linearizability per key. The audit names the common anomaly in plain
// words: a read (or a compare-and-set answered ok) that saw a value which a later write had
// certainly replaced, or a value no write could have put there.
type KV struct {
	init map[string]string
}

var _ Auditor = (*KV)(nil)

// NewKV returns the key-value model starting from initial (nil: every key absent); each value
// is encoded as JSON.
func NewKV(initial map[string]any) (*KV, error) {
	kv := &KV{init: make(map[string]string, len(initial))}
	for k, v := range initial {
		b, err := encode(v)
		if err != nil {
			return nil, fmt.Errorf("new kv model: key %q: %w", k, err)
		}
		kv.init[k] = string(b)
	}
	return kv, nil
}

// Name implements Model.
func (kv *KV) Name() string { return "kv" }

type kvKind uint8

const (
	kvRead kvKind = iota + 1
	kvWrite
	kvCAS
)

type kvIn struct {
	kind     kvKind
	key      string
	from, to string // compacted JSON; "" is absent
}

type kvOut struct {
	res   result
	value string // a read's value, compacted; "" is absent
}

// canon compacts a JSON value; null and nothing are "" (absent).
func canon(raw json.RawMessage) (string, error) {
	b, err := rawOrNil(raw)
	return string(b), err
}

// Translate implements Model.
func (kv *KV) Translate(op Op) (Translated, error) {
	if op.Key == "" {
		return Translated{}, fmt.Errorf("%w: op %d (%s) has no key", ErrInvalidHistory, op.ID, op.Type)
	}
	in := kvIn{key: op.Key}
	switch op.Type {
	case TypeRead:
		in.kind = kvRead
		switch {
		case op.Timeout:
			return Translated{Input: in, Output: kvOut{res: resUnknown}}, nil
		case op.Error != "":
			return Translated{Input: in, Output: kvOut{res: resFailed}}, nil
		}
		v, err := canon(op.Output)
		if err != nil {
			return Translated{}, badOutput(op, "the value read, as JSON")
		}
		return Translated{Input: in, Output: kvOut{res: resOK, value: v}}, nil
	case TypeWrite:
		in.kind = kvWrite
		v, err := canon(op.Input)
		if err != nil {
			return Translated{}, fmt.Errorf("%w: op %d (write) input: %v", ErrInvalidHistory, op.ID, err)
		}
		in.to = v
		res, err := plainOutcome(op)
		return Translated{Input: in, Output: kvOut{res: res}}, err
	case TypeCAS:
		in.kind = kvCAS
		var c CAS
		if err := decodeInput(op, &c); err != nil {
			return Translated{}, err
		}
		var err error
		if in.from, err = canon(c.From); err == nil {
			in.to, err = canon(c.To)
		}
		if err != nil {
			return Translated{}, fmt.Errorf("%w: op %d (cas) input %s: %v", ErrInvalidHistory, op.ID, op.Input, err)
		}
		res, err := okOr(op, OutcomeMismatch, resMismatch)
		return Translated{Input: in, Output: kvOut{res: res}}, err
	}
	return Translated{}, fmt.Errorf("%w: op %d: the kv model has no op type %q", ErrInvalidHistory, op.ID, op.Type)
}

// kvState is one key's value as the search knows it ("" is absent). Every partition starts
// from initial, which stands for the key's initial value until its first op names the key.
type kvState struct {
	value   string
	initial bool
}

func (kv *KV) step(_ context.Context, s kvState, input, output any, emit func(kvState)) {
	in, out := input.(kvIn), output.(kvOut)
	if s.initial {
		s = kvState{value: kv.init[in.key]}
	}
	if out.res == resFailed || (in.kind == kvRead && out.res == resUnknown) {
		emit(s)
		return
	}
	switch in.kind {
	case kvRead:
		if s.value == out.value {
			emit(s)
		}
	case kvWrite:
		if out.res == resUnknown {
			emit(s)
		}
		emit(kvState{value: in.to})
	case kvCAS:
		holds := s.value == in.from
		switch out.res {
		case resOK:
			if holds {
				emit(kvState{value: in.to})
			}
		case resMismatch:
			if !holds {
				emit(s)
			}
		case resUnknown:
			emit(s)
			if holds {
				emit(kvState{value: in.to})
			}
		}
	}
}

// Porcupine implements Model: one partition per key, each starting from the key's initial
// value.
func (kv *KV) Porcupine() porcupine.Model {
	f := &family[kvState]{
		hash: func(s kvState) uint64 {
			if s.initial {
				return 1
			}
			return mix64(hashString(s.value))
		},
		equal: func(a, b kvState) bool { return a == b },
		step:  kv.step,
		describe: func(s kvState) string {
			if s.initial {
				return "its initial value"
			}
			return html.EscapeString(orAbsent(s.value))
		},
	}
	pm := f.porcupine(kvState{initial: true})
	pm.Partition = partitionBy(func(in any) string { return in.(kvIn).key })
	pm.DescribeOperation = describeKVOp
	return pm
}

func orAbsent(v string) string {
	if v == "" {
		return "absent"
	}
	return v
}

func describeKVOp(input, output any) string {
	in, out := input.(kvIn), output.(kvOut)
	var s string
	switch in.kind {
	case kvRead:
		s = fmt.Sprintf("read(%s) → %s", in.key, orAbsent(out.value))
		if out.res != resOK {
			s = fmt.Sprintf("read(%s) → no answer (%s)", in.key, out.res)
		}
	case kvWrite:
		s = fmt.Sprintf("write(%s, %s) → %s", in.key, orAbsent(in.to), out.res)
	case kvCAS:
		s = fmt.Sprintf("cas(%s, %s → %s) → %s", in.key, orAbsent(in.from), orAbsent(in.to), out.res)
	}
	return html.EscapeString(s)
}

// Audit implements Auditor: a read or a compare-and-set answered ok saw the value of a write
// that could still be the latest one.
func (kv *KV) Audit(ops []Op) Audit {
	type ev struct {
		op  Op
		in  kvIn
		out kvOut
	}
	byKey := map[string][]ev{}
	var keys []string
	for _, i := range sortedByInvoke(ops) {
		t, err := kv.Translate(ops[i])
		if err != nil {
			continue
		}
		e := ev{op: ops[i], in: t.Input.(kvIn), out: t.Output.(kvOut)}
		if _, ok := byKey[e.in.key]; !ok {
			keys = append(keys, e.in.key)
		}
		byKey[e.in.key] = append(byKey[e.in.key], e)
	}
	a := newAudit("a read sees the latest write", len(ops))
	for _, k := range keys {
		evs := byKey[k]
		// writers are the ops that may have set the key: writes and compare-and-sets that
		// did not fail, with when they certainly ended (never when ambiguous).
		var writers []ev
		for _, e := range evs {
			if (e.in.kind == kvWrite || e.in.kind == kvCAS) && (e.out.res == resOK || e.out.res == resUnknown) {
				writers = append(writers, e)
			}
		}
		for _, r := range evs {
			var seen string
			switch {
			case r.in.kind == kvRead && r.out.res == resOK:
				seen = r.out.value
			case r.in.kind == kvCAS && r.out.res == resOK:
				seen = r.in.from
			default:
				continue
			}
			// A source of the value seen is the initial value, or a write of it that began
			// before the read ended. It is certainly replaced when a write answered ok began
			// after the source ended and ended before the read began.
			replaced := func(ended int64, self int64) (ev, bool) {
				for _, w := range writers {
					if w.op.ID != self && w.op.ID != r.op.ID && w.out.res == resOK && w.op.Invoke > ended && done(w.op) < r.op.Invoke {
						return w, true
					}
				}
				return ev{}, false
			}
			var over ev
			fresh, sourced := false, false
			if kv.init[k] == seen {
				sourced = true
				if w, ok := replaced(-1, -1); ok {
					over = w
				} else {
					fresh = true
				}
			}
			for _, w := range writers {
				if fresh {
					break
				}
				if w.in.to != seen || w.op.ID == r.op.ID || w.op.Invoke >= gaveUp(r.op) {
					continue
				}
				sourced = true
				if o, ok := replaced(done(w.op), w.op.ID); ok {
					over = o
				} else {
					fresh = true
				}
			}
			what := "read"
			if r.in.kind == kvCAS {
				what = "compare-and-set expected"
			}
			switch {
			case fresh:
			case !sourced:
				a.found(fmt.Sprintf("value never written: %s %s %s = %s at %s, a value no write could have put there",
					r.op.Process, what, k, orAbsent(seen), opSpan(r.op)), r.op.ID)
			default:
				a.found(fmt.Sprintf("stale read: %s %s %s = %s at %s, but %s had written %s = %s at %s, after every write of %s",
					r.op.Process, what, k, orAbsent(seen), opSpan(r.op), over.op.Process, k, orAbsent(over.in.to), opSpan(over.op), orAbsent(seen)),
					r.op.ID, over.op.ID)
			}
		}
	}
	var out Audit
	out.add(a)
	return out
}
