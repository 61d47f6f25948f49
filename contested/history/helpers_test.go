package history

import (
	"encoding/json"
	"fmt"
	"os"
)

// Builders for hand-written histories. Times are plain integers on the recorder's clock.

func raw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func mkOp(id int64, proc string, inv, comp int64, typ, key string, in, out any) Op {
	return Op{ID: id, Process: proc, Invoke: inv, Complete: At(comp), Type: typ, Key: key, Input: raw(in), Output: raw(out)}
}

func read(id int64, proc string, inv, comp int64, key string, bal int64) Op {
	return mkOp(id, proc, inv, comp, TypeRead, key, nil, bal)
}

func write(id int64, proc string, inv, comp int64, key string, val int64) Op {
	return mkOp(id, proc, inv, comp, TypeWrite, key, val, OutcomeOK)
}

func deposit(id int64, proc string, inv, comp int64, key string, amt int64) Op {
	return mkOp(id, proc, inv, comp, TypeDeposit, key, amt, OutcomeOK)
}

func transfer(id int64, proc string, inv, comp int64, from, to string, amt int64, outcome string) Op {
	return mkOp(id, proc, inv, comp, TypeTransfer, from, Transfer{From: from, To: to, Amount: amt}, outcome)
}

func acquire(id int64, proc string, inv, comp int64, holder string, port int, epoch int64) Op {
	return mkOp(id, proc, inv, comp, TypeAcquire, "", LeaseRef{Holder: holder}, Acquired{Port: port, Epoch: epoch})
}

func reclaimedAcquire(id int64, proc string, inv, comp int64, holder string, port int, epoch int64) Op {
	return mkOp(id, proc, inv, comp, TypeAcquire, "", LeaseRef{Holder: holder}, Acquired{Port: port, Epoch: epoch, Reclaimed: true})
}

func noneFree(id int64, proc string, inv, comp int64, holder string) Op {
	return mkOp(id, proc, inv, comp, TypeAcquire, "", LeaseRef{Holder: holder}, OutcomeNoneFree)
}

func leaseOp(typ string, id int64, proc string, inv, comp int64, port int, epoch int64, holder, outcome string) Op {
	return mkOp(id, proc, inv, comp, typ, fmt.Sprint(port), LeaseRef{Port: port, Epoch: epoch, Holder: holder}, outcome)
}

func renew(id int64, proc string, inv, comp int64, port int, epoch int64, holder, outcome string) Op {
	return leaseOp(TypeRenew, id, proc, inv, comp, port, epoch, holder, outcome)
}

func release(id int64, proc string, inv, comp int64, port int, epoch int64, holder, outcome string) Op {
	return leaseOp(TypeRelease, id, proc, inv, comp, port, epoch, holder, outcome)
}

func reclaim(id int64, proc string, inv, comp int64, port int, epoch int64, outcome string) Op {
	return mkOp(id, proc, inv, comp, TypeReclaim, fmt.Sprint(port), LeaseRef{Port: port, Epoch: epoch}, outcome)
}

// ambiguous turns op into one whose outcome is unknown: the error arrived, the answer did not.
func ambiguous(op Op) Op {
	op.Timeout, op.Output, op.Error = true, nil, "context deadline exceeded"
	return op
}

// unanswered turns op into one that never got any response.
func unanswered(op Op) Op {
	op = ambiguous(op)
	op.Complete, op.Error = nil, ""
	return op
}

// failed turns op into a definite failure: an error, no effect.
func failed(op Op, msg string) Op {
	op.Error, op.Output = msg, nil
	return op
}

// readFile returns a file's content, failing the test when it cannot be read.
func readFile(t interface {
	Helper()
	Fatal(...any)
}, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
