package history_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contested/contested/contested/history"
)

// A callback-style job framework pushes each job to a handler, several at once on one client,
// so its worker is not sequential: each handler run is recorded as a process of its own. A
// push-based consumer never asks for a job, so "drained" is a dequeue of its own, answered
// empty once the framework says no job is left. The visibility bound is the framework's
// rescuer: the time after which it hands a stuck job to another worker.
func ExampleNewQueue_callbackFramework() {
	rec := history.NewRecorder(time.Now())
	jobs := []string{"j1", "j2", "j3"}
	for _, job := range jobs {
		id, _ := rec.Invoke("producer", history.TypeEnqueue, job, nil)
		_ = rec.Complete(id, history.OutcomeOK, nil)
	}
	var runs atomic.Int64
	handle := func(job string) { // what the framework calls, once per delivery
		process := fmt.Sprintf("handler-run-%d", runs.Add(1))
		id, _ := rec.Invoke(process, history.TypeDequeue, "", nil)
		_ = rec.Complete(id, history.Delivered{Job: job}, nil)
		id, _ = rec.Invoke(process, history.TypeAck, job, nil)
		_ = rec.Complete(id, history.OutcomeOK, nil)
	}
	var wg sync.WaitGroup
	for _, job := range jobs {
		wg.Go(func() { handle(job) })
	}
	wg.Wait()
	// The framework reports nothing left to run (its count of available jobs is 0).
	id, _ := rec.Invoke("drain", history.TypeDequeue, "", nil)
	_ = rec.Complete(id, history.OutcomeEmpty, nil)

	const rescueAfter = 2 * time.Second // the rescuer's delay, as the test configures it
	model := history.NewQueue(history.QueueSpec{Delivery: history.ExactlyOnce, Visibility: rescueAfter})
	res, _ := history.Check(context.Background(), model, rec.Ops(), history.Options{Expected: rec.Issued()})
	fmt.Println(res.Verdict)
	// Output:
	// Ok
}

// Repeated enqueues of one key are one job: the queue model reads every enqueue of a key as
// the same job, so a store that makes each enqueue a job of its own needs a key per enqueue.
// Under ExactlyOnce, a key enqueued twice and delivered twice is a duplicate delivery.
func ExampleNewQueue_repeatedKeys() {
	rec := history.NewRecorder(time.Now())
	for range 2 {
		id, _ := rec.Invoke("producer", history.TypeEnqueue, "j1", nil)
		_ = rec.Complete(id, history.OutcomeOK, nil)
	}
	for range 2 {
		id, _ := rec.Invoke("worker", history.TypeDequeue, "", nil)
		_ = rec.Complete(id, history.Delivered{Job: "j1"}, nil)
	}
	id, _ := rec.Invoke("worker", history.TypeDequeue, "", nil)
	_ = rec.Complete(id, history.OutcomeEmpty, nil)

	model := history.NewQueue(history.QueueSpec{Delivery: history.ExactlyOnce})
	res, _ := history.Check(context.Background(), model, rec.Ops(), history.Options{Expected: rec.Issued()})
	fmt.Println(res.Verdict, res.Anomalies[0].Property)
	// Output:
	// Illegal delivered once
}
