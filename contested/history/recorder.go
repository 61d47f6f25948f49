package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Recorder collects a history. It is safe for concurrent use by any number of clients.
//
// Every time it stamps is time.Since(base) in nanoseconds. Give every recorder of one history
// the same base, taken from time.Now() in this process, so that the times are monotonic (Go
// keeps a monotonic reading in values from time.Now; see the "Monotonic Clocks" section of
// package time) and comparable across clients.
//
// Usage: id := Invoke(...) just before the request leaves; then exactly one of Complete
// (a definite answer: a value, a business rejection, or an error that guarantees nothing
// happened) or Ambiguous (a timeout or an error that leaves the outcome unknown). An op that
// gets neither is reported by Ops as having no response, with timeout set. A retry is a new
// Invoke: retries are never merged into one op.
type Recorder struct {
	base time.Time

	mu     sync.Mutex
	next   int64
	ops    map[int64]*entry
	faults []FaultWindow
	open   []string // epochs of open fault windows, oldest first
	nfault int
}

// entry is one op plus whether an outcome has been recorded for it.
type entry struct {
	op   Op
	done bool
}

// NewRecorder returns a recorder whose clock starts at base; a zero base means now.
func NewRecorder(base time.Time) *Recorder {
	if base.IsZero() {
		base = time.Now()
	}
	return &Recorder{base: base, ops: make(map[int64]*entry)}
}

// Base returns the time every stamp is measured from.
func (r *Recorder) Base() time.Time { return r.base }

// Now returns the recorder's clock: nanoseconds since its base time.
func (r *Recorder) Now() int64 { return time.Since(r.base).Nanoseconds() }

// Invoke starts an op and returns its id. Call it just before the request is sent: the invoke
// stamp must not be later than the send. input is encoded as JSON; nil means none. The op
// gets the fault epoch of the most recently opened fault window still open.
func (r *Recorder) Invoke(process, typ, key string, input any) (int64, error) {
	in, err := encode(input)
	if err != nil {
		return 0, fmt.Errorf("record %s %q input: %w", typ, key, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	op := Op{ID: r.next, Process: process, Type: typ, Key: key, Input: in, Invoke: r.Now()}
	if n := len(r.open); n > 0 {
		op.FaultEpoch = r.open[n-1]
	}
	r.ops[op.ID] = &entry{op: op}
	return op.ID, nil
}

// Complete records a definite outcome for op id: output is the response (encoded as JSON; nil
// for none) and err, when not nil, an error that guarantees the op took no effect (a
// rejection the service decided, a constraint violation before commit). An error that cannot
// guarantee that belongs in Ambiguous. Call it after the response is in.
//
// Recording an outcome again for the same id is accepted only if it is the same outcome;
// a different one returns ErrConflictingOutcome and keeps the first.
func (r *Recorder) Complete(id int64, output any, err error) error {
	at := r.Now()
	out, eerr := encode(output)
	if eerr != nil {
		return fmt.Errorf("record op %d output: %w", id, eerr)
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return r.finish(id, at, out, msg, false)
}

// Ambiguous records that op id ended without a knowable outcome: a timeout, a connection
// reset while the commit was in flight, any error after which the op may or may not have
// taken effect. err is kept for diagnosis only. The checker lets such an op take effect at any
// time after its invoke, or never.
func (r *Recorder) Ambiguous(id int64, err error) error {
	at := r.Now()
	msg := "no response"
	if err != nil {
		msg = err.Error()
	}
	return r.finish(id, at, nil, msg, true)
}

func (r *Recorder) finish(id, at int64, out json.RawMessage, msg string, timeout bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.ops[id]
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownOp, id)
	}
	if e.done {
		if bytes.Equal(e.op.Output, out) && e.op.Error == msg && e.op.Timeout == timeout {
			return nil
		}
		return fmt.Errorf("%w: op %d first %s, now %s", ErrConflictingOutcome, id, describeOutcome(e.op.Output, e.op.Error, e.op.Timeout), describeOutcome(out, msg, timeout))
	}
	e.done = true
	e.op.Complete = &at
	e.op.Output, e.op.Error, e.op.Timeout = out, msg, timeout
	return nil
}

// Record adds an op built elsewhere: read back from another process, or from a server-side
// audit log. An op with ID 0 gets the next free id. An op whose id is already recorded is
// accepted only if it is the same op with the same outcome; otherwise ErrConflictingOutcome.
// The op is not validated here; Check validates the whole history.
func (r *Recorder) Record(op Op) error {
	var err error
	if op.Input, err = rawOrNil(op.Input); err != nil {
		return fmt.Errorf("%w: op %d input: %v", ErrInvalidHistory, op.ID, err)
	}
	if op.Output, err = rawOrNil(op.Output); err != nil {
		return fmt.Errorf("%w: op %d output: %v", ErrInvalidHistory, op.ID, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.ID == 0 {
		r.next++
		op.ID = r.next
	}
	if e, ok := r.ops[op.ID]; ok {
		if sameOp(e.op, op) && (!e.done || sameOutcome(e.op, op)) {
			if !e.done {
				e.op, e.done = op, op.Complete != nil || op.Timeout
			}
			return nil
		}
		return fmt.Errorf("%w: op %d first %s, now %s", ErrConflictingOutcome, op.ID, describeOutcome(e.op.Output, e.op.Error, e.op.Timeout), describeOutcome(op.Output, op.Error, op.Timeout))
	}
	r.next = max(r.next, op.ID)
	r.ops[op.ID] = &entry{op: op, done: op.Complete != nil || op.Timeout}
	return nil
}

func sameOp(a, b Op) bool {
	return a.Process == b.Process && a.Type == b.Type && a.Key == b.Key && bytes.Equal(a.Input, b.Input)
}

func sameOutcome(a, b Op) bool {
	return bytes.Equal(a.Output, b.Output) && a.Error == b.Error && a.Timeout == b.Timeout
}

func describeOutcome(out json.RawMessage, msg string, timeout bool) string {
	switch {
	case timeout:
		return fmt.Sprintf("ambiguous (%s)", msg)
	case msg != "":
		return fmt.Sprintf("failed (%s) output %s", msg, orNull(out))
	default:
		return "output " + orNull(out)
	}
}

func orNull(b json.RawMessage) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}

// Issued returns how many op ids the recorder has handed out or taken in: the number of ops
// the workload produced. Pass it as Options.Expected so a history that lost ops on the way to
// the checker is refused.
func (r *Recorder) Issued() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Ops returns a copy of the history, in op id order. An op still waiting for its outcome is
// reported as having no response: complete nil and timeout true.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	out := make([]Op, 0, len(r.ops))
	for _, e := range r.ops {
		op := e.op
		if !e.done {
			op.Complete, op.Output, op.Timeout = nil, nil, true
		}
		out = append(out, op)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Op) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// BeginFault opens a fault window named name (the lever or leg) and returns its epoch, the id
// ops invoked while it is open carry in fault_epoch. Call it before arming the fault.
func (r *Recorder) BeginFault(name string) (epoch string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nfault++
	epoch = fmt.Sprintf("%s#%d", name, r.nfault)
	r.faults = append(r.faults, FaultWindow{Epoch: epoch, Name: name, Start: r.Now()})
	r.open = append(r.open, epoch)
	return epoch
}

// EndFault closes the fault window epoch. Call it after the fault is disarmed. Closing an
// epoch that is not open returns ErrUnknownFault.
func (r *Recorder) EndFault(epoch string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.open, epoch)
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrUnknownFault, epoch)
	}
	r.open = slices.Delete(r.open, i, i+1)
	at := r.Now()
	for k := range r.faults {
		if r.faults[k].Epoch == epoch {
			r.faults[k].End = &at
		}
	}
	return nil
}

// Faults returns a copy of the fault windows in the order they were opened; a window still
// open has End nil.
func (r *Recorder) Faults() []FaultWindow {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.faults)
	for i := range out {
		if out[i].End != nil {
			out[i].End = At(*out[i].End)
		}
	}
	return out
}

// encode turns a payload into compact JSON; nil and values that encode to null become nil.
// A json.RawMessage is taken as already encoded.
func encode(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return rawOrNil(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return rawOrNil(b)
}
