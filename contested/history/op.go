package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Sentinel errors callers branch on.
var (
	// ErrInvalidHistory: the history breaks a rule of the record (see the package doc), or an
	// op has a type or payload the model does not understand. It is a recording problem, not a
	// verdict on the service: the history is too weak to judge.
	ErrInvalidHistory = errors.New("invalid history")
	// ErrConflictingOutcome: one op id was recorded with two different outcomes. That is a
	// recorder bug; the history must not be checked until it is fixed.
	ErrConflictingOutcome = errors.New("op recorded twice with different outcomes")
	// ErrUnknownOp: an outcome was recorded for an op id the recorder never handed out.
	ErrUnknownOp = errors.New("unknown op id")
	// ErrUnknownFault: EndFault was given an epoch that is not open.
	ErrUnknownFault = errors.New("unknown or already closed fault epoch")
	// ErrTruncated: fewer ops reached the checker than the workload produced.
	ErrTruncated = errors.New("history truncated")
)

// Op is one operation of a history; its JSON form is the history record described in the
// package doc. Input and Output hold JSON so that a history read back from disk checks exactly
// like the one recorded live.
type Op struct {
	ID         int64           // op_id: unique within the history
	Process    string          // process: client, session or stream id
	Invoke     int64           // invoke: ns since the base time
	Complete   *int64          // complete: ns since the base time; nil when no response came
	Type       string          // type: read, write, transfer, …
	Key        string          // key: the object addressed; "" for none
	Input      json.RawMessage // input: arguments; nil for none
	Output     json.RawMessage // output: response; nil for none (always nil when Timeout)
	Error      string          // error: what the client saw; "" for none
	Timeout    bool            // timeout: the outcome is unknown
	FaultEpoch string          // fault_epoch: the fault window open at invoke; "" for none
}

// At returns a pointer to ns, for building an Op's Complete by hand.
func At(ns int64) *int64 { return &ns }

// Ambiguous reports whether the op's outcome is unknown: it may or may not have taken effect.
func (op Op) Ambiguous() bool { return op.Timeout }

// Failed reports whether the op definitely did not take effect (an error that is not
// ambiguous).
func (op Op) Failed() bool { return !op.Timeout && op.Error != "" }

// opWire is Op on the wire: every field present, unused ones null.
type opWire struct {
	ID         int64           `json:"op_id"`
	Process    string          `json:"process"`
	Invoke     int64           `json:"invoke"`
	Complete   *int64          `json:"complete"`
	Type       string          `json:"type"`
	Key        *string         `json:"key"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	Error      *string         `json:"error"`
	Timeout    bool            `json:"timeout"`
	FaultEpoch *string         `json:"fault_epoch"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// rawOrNil normalizes an absent or JSON-null payload to nil and compacts the rest, so that
// equal payloads compare equal byte for byte.
func rawOrNil(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MarshalJSON writes the history record, with null for every unused field.
func (op Op) MarshalJSON() ([]byte, error) {
	in, err := rawOrNil(op.Input)
	if err != nil {
		return nil, fmt.Errorf("op %d input: %w", op.ID, err)
	}
	out, err := rawOrNil(op.Output)
	if err != nil {
		return nil, fmt.Errorf("op %d output: %w", op.ID, err)
	}
	return json.Marshal(opWire{
		ID: op.ID, Process: op.Process, Invoke: op.Invoke, Complete: op.Complete, Type: op.Type,
		Key: nullable(op.Key), Input: in, Output: out, Error: nullable(op.Error),
		Timeout: op.Timeout, FaultEpoch: nullable(op.FaultEpoch),
	})
}

// UnmarshalJSON reads the history record. Unknown fields are ignored; null and absent read
// the same.
func (op *Op) UnmarshalJSON(data []byte) error {
	var w opWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	in, err := rawOrNil(w.Input)
	if err != nil {
		return err
	}
	out, err := rawOrNil(w.Output)
	if err != nil {
		return err
	}
	*op = Op{
		ID: w.ID, Process: w.Process, Invoke: w.Invoke, Complete: w.Complete, Type: w.Type,
		Key: deref(w.Key), Input: in, Output: out, Error: deref(w.Error),
		Timeout: w.Timeout, FaultEpoch: deref(w.FaultEpoch),
	}
	return nil
}

// FaultWindow is the span during which one fault was armed, on the same clock as the ops.
type FaultWindow struct {
	Epoch string `json:"fault_epoch"` // the id ops carry in fault_epoch
	Name  string `json:"fault"`       // the lever or leg, e.g. "reset"
	Start int64  `json:"start"`       // ns since the base time
	End   *int64 `json:"end"`         // ns since the base time; nil while still open
}

// WriteJSONL writes one history record per line.
func WriteJSONL(w io.Writer, ops []Op) error { return writeLines(w, ops) }

// ReadJSONL reads a history written by WriteJSONL. Blank lines are skipped; a line that does
// not parse is an error naming the line.
func ReadJSONL(r io.Reader) ([]Op, error) { return readLines[Op](r) }

// WriteFaultsJSONL writes one fault window per line.
func WriteFaultsJSONL(w io.Writer, faults []FaultWindow) error { return writeLines(w, faults) }

// ReadFaultsJSONL reads fault windows written by WriteFaultsJSONL.
func ReadFaultsJSONL(r io.Reader) ([]FaultWindow, error) { return readLines[FaultWindow](r) }

func writeLines[T any](w io.Writer, items []T) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw) // Encode ends every value with a newline
	enc.SetEscapeHTML(false)
	for i := range items {
		if err := enc.Encode(&items[i]); err != nil {
			return fmt.Errorf("write history line %d: %w", i+1, err)
		}
	}
	return bw.Flush()
}

func readLines[T any](r io.Reader) ([]T, error) {
	br := bufio.NewReader(r)
	var out []T
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var v T
			if uerr := json.Unmarshal(b, &v); uerr != nil {
				return out, fmt.Errorf("read history line %d: %w", line, uerr)
			}
			out = append(out, v)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read history line %d: %w", line, err)
		}
	}
}

// Validate checks the rules every history must keep (see the package doc) and returns an
// error wrapping ErrInvalidHistory that names the first op breaking one. A history that fails
// here is too weak to judge: the right verdict is "fix the recorder", not a check result.
func Validate(ops []Op) error {
	seen := make(map[int64]struct{}, len(ops))
	for i := range ops {
		op := &ops[i]
		if _, dup := seen[op.ID]; dup {
			return fmt.Errorf("%w: op id %d appears twice", ErrInvalidHistory, op.ID)
		}
		seen[op.ID] = struct{}{}
		switch {
		case op.Type == "":
			return fmt.Errorf("%w: op %d has no type", ErrInvalidHistory, op.ID)
		case op.Invoke < 0:
			return fmt.Errorf("%w: op %d invoked at %d, before the base time", ErrInvalidHistory, op.ID, op.Invoke)
		case op.Complete == nil && !op.Timeout:
			return fmt.Errorf("%w: op %d has no complete time but is not marked timeout", ErrInvalidHistory, op.ID)
		case op.Complete != nil && *op.Complete < op.Invoke:
			return fmt.Errorf("%w: op %d completes at %d, before its invoke at %d", ErrInvalidHistory, op.ID, *op.Complete, op.Invoke)
		case op.Timeout && len(op.Output) > 0 && string(bytes.TrimSpace(op.Output)) != "null":
			return fmt.Errorf("%w: op %d is marked timeout but has an output (a timed-out op's answer is unknown)", ErrInvalidHistory, op.ID)
		}
	}
	return validateSequential(ops)
}

// validateSequential checks that no process has two ops in flight at once. An op that never
// completed is taken to end at its invoke: its client gave up on it.
func validateSequential(ops []Op) error {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		oa, ob := &ops[a], &ops[b]
		if oa.Process != ob.Process {
			if oa.Process < ob.Process {
				return -1
			}
			return 1
		}
		if oa.Invoke != ob.Invoke {
			if oa.Invoke < ob.Invoke {
				return -1
			}
			return 1
		}
		if oa.ID < ob.ID {
			return -1
		}
		return 1
	})
	for k := 1; k < len(idx); k++ {
		prev, cur := &ops[idx[k-1]], &ops[idx[k]]
		if prev.Process != cur.Process {
			continue
		}
		end := prev.Invoke
		if prev.Complete != nil {
			end = *prev.Complete
		}
		if cur.Invoke < end {
			return fmt.Errorf("%w: process %q invoked op %d at %d while op %d was in flight until %d (a process must be sequential; give concurrent streams their own process ids)",
				ErrInvalidHistory, cur.Process, cur.ID, cur.Invoke, prev.ID, end)
		}
	}
	return nil
}
