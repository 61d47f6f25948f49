package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRecorderConcurrentClientsGetUniqueIDsAndOrderedStamps(t *testing.T) {
	r := NewRecorder(time.Time{})
	const procs, each = 8, 200
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			proc := fmt.Sprintf("p%d", p)
			for i := range each {
				id, err := r.Invoke(proc, TypeWrite, "a", i)
				if err != nil {
					t.Error(err)
					return
				}
				if err := r.Complete(id, OutcomeOK, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	ops := r.Ops()
	if len(ops) != procs*each || r.Issued() != procs*each {
		t.Fatalf("%d ops, %d issued, want %d", len(ops), r.Issued(), procs*each)
	}
	for i, op := range ops {
		if op.ID != int64(i+1) {
			t.Fatalf("op %d has id %d: ids are not 1..n", i, op.ID)
		}
		if op.Complete == nil || *op.Complete < op.Invoke {
			t.Fatalf("op %d: invoke %d, complete %v", op.ID, op.Invoke, op.Complete)
		}
	}
	if err := Validate(ops); err != nil {
		t.Fatalf("a recorder's history is invalid: %v", err)
	}
}

func TestRecorderOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		record  func(r *Recorder, id int64) error
		wantErr error
		check   func(t *testing.T, op Op)
	}{
		{
			name:   "complete with an output",
			record: func(r *Recorder, id int64) error { return r.Complete(id, 42, nil) },
			check: func(t *testing.T, op Op) {
				if string(op.Output) != "42" || op.Timeout || op.Error != "" || op.Complete == nil {
					t.Errorf("op %+v", op)
				}
			},
		},
		{
			name: "the same outcome twice is one outcome",
			record: func(r *Recorder, id int64) error {
				if err := r.Complete(id, 42, nil); err != nil {
					return err
				}
				return r.Complete(id, 42, nil)
			},
		},
		{
			name: "a different output for the same op is a recorder bug",
			record: func(r *Recorder, id int64) error {
				if err := r.Complete(id, 42, nil); err != nil {
					return err
				}
				return r.Complete(id, 43, nil)
			},
			wantErr: ErrConflictingOutcome,
			check: func(t *testing.T, op Op) {
				if string(op.Output) != "42" {
					t.Errorf("the first outcome was not kept: %s", op.Output)
				}
			},
		},
		{
			name: "ambiguous after complete is a recorder bug",
			record: func(r *Recorder, id int64) error {
				if err := r.Complete(id, 42, nil); err != nil {
					return err
				}
				return r.Ambiguous(id, errors.New("timeout"))
			},
			wantErr: ErrConflictingOutcome,
		},
		{
			name:   "a definite failure keeps its error and output",
			record: func(r *Recorder, id int64) error { return r.Complete(id, OutcomeFenced, errors.New("lease fenced")) },
			check: func(t *testing.T, op Op) {
				if !op.Failed() || op.Ambiguous() || string(op.Output) != `"fenced"` {
					t.Errorf("op %+v", op)
				}
			},
		},
		{
			name: "ambiguous: complete stamped, no output, error kept",
			record: func(r *Recorder, id int64) error {
				return r.Ambiguous(id, errors.New("read: connection reset by peer"))
			},
			check: func(t *testing.T, op Op) {
				if !op.Ambiguous() || op.Failed() || op.Complete == nil || op.Output != nil || !strings.Contains(op.Error, "reset") {
					t.Errorf("op %+v", op)
				}
			},
		},
		{
			name:   "no outcome at all: no response",
			record: func(r *Recorder, id int64) error { return nil },
			check: func(t *testing.T, op Op) {
				if !op.Timeout || op.Complete != nil || op.Output != nil {
					t.Errorf("op %+v", op)
				}
			},
		},
		{
			name:    "an id never handed out",
			record:  func(r *Recorder, id int64) error { return r.Complete(id+100, 1, nil) },
			wantErr: ErrUnknownOp,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder(time.Now())
			id, err := r.Invoke("p1", TypeRead, "a", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.record(r, id); !errors.Is(err, tt.wantErr) {
				t.Fatalf("record: %v, want %v", err, tt.wantErr)
			}
			ops := r.Ops()
			if len(ops) != 1 {
				t.Fatalf("%d ops", len(ops))
			}
			if tt.check != nil {
				tt.check(t, ops[0])
			}
		})
	}
}

func TestRecorderRecord(t *testing.T) {
	r := NewRecorder(time.Now())
	op := write(7, "audit", 0, 10, "a", 5)
	if err := r.Record(op); err != nil {
		t.Fatal(err)
	}
	if err := r.Record(op); err != nil {
		t.Fatalf("the same op twice: %v", err)
	}
	other := op
	other.Output = raw(OutcomeRejected)
	if err := r.Record(other); !errors.Is(err, ErrConflictingOutcome) {
		t.Fatalf("a different outcome: %v, want ErrConflictingOutcome", err)
	}
	id, err := r.Invoke("p1", TypeRead, "a", nil)
	if err != nil || id != 8 {
		t.Fatalf("next id after a recorded op 7: %d, %v", id, err)
	}
	if err := r.Record(Op{Process: "audit", Type: TypeRead, Key: "a", Complete: At(3)}); err != nil {
		t.Fatal(err)
	}
	if got := r.Ops(); len(got) != 3 || got[2].ID != 9 {
		t.Fatalf("ops %+v", got)
	}
}

func TestRecorderFaultWindows(t *testing.T) {
	r := NewRecorder(time.Now())
	before, _ := r.Invoke("p", TypeRead, "a", nil)
	reset := r.BeginFault("reset")
	during, _ := r.Invoke("p", TypeRead, "a", nil)
	burst := r.BeginFault("burst")
	nested, _ := r.Invoke("p", TypeRead, "a", nil)
	if err := r.EndFault(burst); err != nil {
		t.Fatal(err)
	}
	back, _ := r.Invoke("p", TypeRead, "a", nil)
	if err := r.EndFault(reset); err != nil {
		t.Fatal(err)
	}
	after, _ := r.Invoke("p", TypeRead, "a", nil)
	if err := r.EndFault(reset); !errors.Is(err, ErrUnknownFault) {
		t.Fatalf("closing twice: %v, want ErrUnknownFault", err)
	}
	open := r.BeginFault("disconnect")

	if reset != "reset#1" || burst != "burst#2" {
		t.Errorf("epochs %q, %q", reset, burst)
	}
	want := map[int64]string{before: "", during: reset, nested: burst, back: reset, after: ""}
	for _, op := range r.Ops() {
		if op.FaultEpoch != want[op.ID] {
			t.Errorf("op %d has fault_epoch %q, want %q", op.ID, op.FaultEpoch, want[op.ID])
		}
	}
	faults := r.Faults()
	if len(faults) != 3 {
		t.Fatalf("faults %+v", faults)
	}
	for _, f := range faults[:2] {
		if f.End == nil || *f.End < f.Start {
			t.Errorf("closed window %+v", f)
		}
	}
	if faults[2].Epoch != open || faults[2].End != nil {
		t.Errorf("open window %+v", faults[2])
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	ops := []Op{
		read(1, "p1", 0, 10, "a", 5),
		ambiguous(transfer(2, "p2", 3, 40, "a", "b", 1, "")),
		unanswered(write(3, "p3", 50, 0, "a", 9)),
		failed(release(4, "p4", 60, 70, 31001, 3, "T/x", OutcomeFenced), "lease fenced"),
	}
	ops[3].Output = raw(OutcomeFenced)
	ops[0].FaultEpoch = "reset#1"
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, ops); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(ops) {
		t.Fatalf("%d lines for %d ops:\n%s", len(lines), len(ops), buf.String())
	}
	for _, l := range lines {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &fields); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"op_id", "process", "invoke", "complete", "type", "key", "input", "output", "error", "timeout", "fault_epoch"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("line %s lacks %q (unused fields are null, never absent)", l, k)
			}
		}
	}
	if want := `{"op_id":3,"process":"p3","invoke":50,"complete":null,"type":"write","key":"a","input":9,"output":null,"error":null,"timeout":true,"fault_epoch":null}`; lines[2] != want {
		t.Errorf("line 3:\n got %s\nwant %s", lines[2], want)
	}
	back, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ops, back); diff != "" {
		t.Errorf("round trip (-wrote +read):\n%s", diff)
	}
}

func TestReadJSONL(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr string
	}{
		{"blank lines and unknown fields", "\n{\"op_id\":1,\"type\":\"read\",\"complete\":1,\"extra\":true}\n\n", 1, ""},
		{"absent fields read as null", `{"op_id":1,"type":"read","timeout":true}`, 1, ""},
		{"no trailing newline", `{"op_id":1}` + "\n" + `{"op_id":2}`, 2, ""},
		{"a broken line is named", "{\"op_id\":1}\n{\"op_id\":\n", 1, "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, err := ReadJSONL(strings.NewReader(tt.in))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ReadJSONL: %v, want error containing %q", err, tt.wantErr)
			}
			if len(ops) != tt.want {
				t.Errorf("%d ops, want %d", len(ops), tt.want)
			}
		})
	}
}

func TestFaultsJSONLRoundTrip(t *testing.T) {
	faults := []FaultWindow{{Epoch: "reset#1", Name: "reset", Start: 5, End: At(9)}, {Epoch: "burst#2", Name: "burst", Start: 7}}
	var buf bytes.Buffer
	if err := WriteFaultsJSONL(&buf, faults); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"end":null`) {
		t.Errorf("an open window must say end null: %s", buf.String())
	}
	back, err := ReadFaultsJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(faults, back); diff != "" {
		t.Errorf("round trip (-wrote +read):\n%s", diff)
	}
}

// TestRecordedHistoryChecksLikeItsFile makes sure a history judged live and the same history
// read back from disk get the same verdict.
func TestRecordedHistoryChecksLikeItsFile(t *testing.T) {
	ops := []Op{write(1, "p1", 0, 10, "a", 10), read(2, "p2", 20, 30, "a", 0)}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, ops); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string][]Op{"live": ops, "file": back} {
		res, err := Check(t.Context(), NewAccounts(nil), h, Options{})
		if err != nil || res.Verdict != Illegal {
			t.Errorf("%s: %v, %s; want Illegal", name, err, res)
		}
	}
}
