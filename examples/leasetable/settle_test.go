package leasetable_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/contested/contested/contested/history"
)

// testdata/reset-lost-acquires.history.jsonl is a reset leg's history (58 ops, 12 acquires
// whose answer was lost) that porcupine could not decide in three minutes against the Lease
// model as recorded. The table was empty at quiescence.
func TestSettlingLostAcquiresMakesAResetHistoryDecidable(t *testing.T) {
	f, err := os.Open("testdata/reset-lost-acquires.history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops, err := history.ReadJSONL(f)
	if err != nil {
		t.Fatal(err)
	}
	free := make([]row, len(ports))
	for i, p := range ports {
		free[i] = row{port: p, epoch: 1}
	}
	lostAcquires := func(ops []history.Op) int {
		n := 0
		for _, op := range ops {
			if op.Type == history.TypeAcquire && op.Ambiguous() {
				n++
			}
		}
		return n
	}
	reclaim := history.Op{ID: 1000, Process: "r", Type: history.TypeReclaim, Invoke: 1, Complete: history.At(2),
		Input: json.RawMessage(`{"port":41001,"epoch":1}`), Output: json.RawMessage(`"ok"`)}
	heldByLost := append([]row(nil), free...)
	heldByLost[0] = row{port: ports[0], holder: "c3.0", epoch: 1}

	tests := []struct {
		name string
		ops  []history.Op
		rows []row
		lost int // lost acquires left ambiguous
	}{
		{"nothing held at quiescence: every lost acquire did nothing", ops, free, 0},
		{"a lost acquire whose holder still holds a row took effect", ops, heldByLost, 1},
		{"a reclaim could have freed one: nothing is settled", append(append([]history.Op(nil), ops...), reclaim), free, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := settleLostAcquires(tt.ops, tt.rows)
			if n := lostAcquires(got); n != tt.lost {
				t.Fatalf("%d lost acquires left ambiguous, want %d", n, tt.lost)
			}
			if lostAcquires(tt.ops) != 12 {
				t.Fatal("settling changed the recorded history")
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := history.Check(ctx, history.NewLease(ports...), settleLostAcquires(ops, free), history.Options{})
	if err != nil || !res.Green() {
		t.Fatalf("the settled history: %s: %v", res, err)
	}
	t.Log(res)
}
