package history_test

import (
	"context"
	"fmt"
	"time"

	"github.com/contested/contested/contested/history"
)

// Two clients take one lease-based lock. The second is granted it while the first's lease is
// certainly still good (its time to live is an hour): two holders at once.
func ExampleNewLock() {
	rec := history.NewRecorder(time.Now())
	for i, client := range []string{"client-1", "client-2"} {
		id, _ := rec.Invoke(client, history.TypeAcquire, "L", history.LockRef{Holder: client})
		_ = rec.Complete(id, history.Granted{Token: int64(7 + i)}, nil) // the lock's answer: tokens 7, 8
	}
	model := history.NewLock(history.LockSpec{TTL: time.Hour, Fencing: true})
	res, err := history.Check(context.Background(), model, rec.Ops(), history.Options{Expected: rec.Issued()})
	if err != nil {
		fmt.Println("cannot check:", err)
		return
	}
	fmt.Println(res.Verdict)
	for _, a := range res.Anomalies {
		fmt.Println(a.Property)
	}
	// Output:
	// Illegal
	// one holder at a time
}

// A producer enqueues two jobs and both are acknowledged; a worker gets the first, and then
// the queue answers empty: the second job was lost.
func ExampleNewQueue() {
	rec := history.NewRecorder(time.Now())
	for _, job := range []string{"j1", "j2"} {
		id, _ := rec.Invoke("producer", history.TypeEnqueue, job, map[string]string{"job": job})
		_ = rec.Complete(id, history.OutcomeOK, nil)
	}
	id, _ := rec.Invoke("worker", history.TypeDequeue, "", nil)
	_ = rec.Complete(id, history.Delivered{Job: "j1"}, nil)
	id, _ = rec.Invoke("worker", history.TypeAck, "j1", nil)
	_ = rec.Complete(id, history.OutcomeOK, nil)
	id, _ = rec.Invoke("worker", history.TypeDequeue, "", nil)
	_ = rec.Complete(id, history.OutcomeEmpty, nil)

	model := history.NewQueue(history.QueueSpec{Delivery: history.ExactlyOnce, FIFO: true})
	res, _ := history.Check(context.Background(), model, rec.Ops(), history.Options{Expected: rec.Issued()})
	fmt.Println(res.Verdict, res.Anomalies[0].Property)
	// Output:
	// Illegal every acknowledged enqueue is delivered
}

// A write whose answer was lost may land at any time after it was sent, so a read that sees
// its value is legal; a compare-and-set that then finds the value it expected succeeds.
func ExampleNewKV() {
	rec := history.NewRecorder(time.Now())
	id, _ := rec.Invoke("client-1", history.TypeWrite, "x", 1)
	_ = rec.Ambiguous(id, context.DeadlineExceeded) // no answer: it may or may not have happened
	id, _ = rec.Invoke("client-2", history.TypeRead, "x", nil)
	_ = rec.Complete(id, 1, nil)
	id, _ = rec.Invoke("client-2", history.TypeCAS, "x", history.CAS{From: []byte("1"), To: []byte("2")})
	_ = rec.Complete(id, history.OutcomeOK, nil)

	model, _ := history.NewKV(map[string]any{"x": 0})
	res, _ := history.Check(context.Background(), model, rec.Ops(), history.Options{Expected: rec.Issued()})
	fmt.Println(res.Verdict, "green:", res.Green())
	// Output:
	// Ok green: true
}

// A transfer moves 60 from alice to bob; a read of every balance at once then sums to more
// than the bank holds.
func ExampleNewBank() {
	rec := history.NewRecorder(time.Now())
	id, _ := rec.Invoke("client-1", history.TypeTransfer, "alice", history.Transfer{From: "alice", To: "bob", Amount: 60})
	_ = rec.Complete(id, history.OutcomeOK, nil)
	id, _ = rec.Invoke("auditor", history.TypeBalances, "", nil)
	_ = rec.Complete(id, map[string]int64{"alice": 60, "bob": 60}, nil)

	model := history.NewBank(map[string]int64{"alice": 100})
	res, _ := history.Check(context.Background(), model, rec.Ops(), history.Options{Expected: rec.Issued()})
	fmt.Println(res.Verdict, res.Anomalies[0].Property)
	// Output:
	// Illegal money is conserved
}

// A request and its replay under one idempotency key: the replay must answer what the first
// answered, and the service must have applied the key once.
func ExampleNewIdempotent() {
	rec := history.NewRecorder(time.Now())
	payment := map[string]int{"amount": 5}
	id, _ := rec.Invoke("client-1", history.TypeRequest, "key-7", payment)
	_ = rec.Complete(id, map[string]int{"payment": 8}, nil)
	id, _ = rec.Invoke("client-1", history.TypeRequest, "key-7", payment) // the retry
	_ = rec.Complete(id, map[string]int{"payment": 9}, nil)
	id, _ = rec.Invoke("audit", history.TypeApplied, "key-7", nil) // read from the service at rest
	_ = rec.Complete(id, 1, nil)

	res, _ := history.Check(context.Background(), history.NewIdempotent(), rec.Ops(), history.Options{Expected: rec.Issued()})
	fmt.Println(res.Verdict, res.Anomalies[0].Property)
	// Output:
	// Illegal a replay answers what the first request answered
}

// A ledger answers a transfer of 60 "ok" while alice holds 50: money created. Accounts checks
// the ledger's reads, writes, deposits and transfers as one linearizable history; Bank is it
// made general.
func ExampleNewAccounts() {
	rec := history.NewRecorder(time.Now())
	id, _ := rec.Invoke("client-1", history.TypeTransfer, "alice", history.Transfer{From: "alice", To: "bob", Amount: 60})
	_ = rec.Complete(id, history.OutcomeOK, nil)
	id, _ = rec.Invoke("client-1", history.TypeRead, "bob", nil)
	_ = rec.Complete(id, 60, nil)

	model := history.NewAccounts(map[string]int64{"alice": 50})
	res, _ := history.Check(context.Background(), model, rec.Ops(), history.Options{Expected: rec.Issued()})
	fmt.Println(res.Verdict)
	// Output:
	// Illegal
}

// Two workers acquire a port from a lease table and both are handed port 7000, neither by
// taking over an expired lease: two holders of one port.
func ExampleNewLease() {
	rec := history.NewRecorder(time.Now())
	for i, worker := range []string{"worker-1", "worker-2"} {
		id, _ := rec.Invoke(worker, history.TypeAcquire, "", history.LeaseRef{Holder: worker})
		_ = rec.Complete(id, history.Acquired{Port: 7000, Epoch: int64(1 + i)}, nil)
	}
	res, _ := history.Check(context.Background(), history.NewLease(7000), rec.Ops(), history.Options{Expected: rec.Issued()})
	fmt.Println(res.Verdict)
	// Output:
	// Illegal
}
