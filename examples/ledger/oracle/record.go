package oracle

import (
	"errors"
	"sync"
	"time"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/examples/ledger"
)

// Op types of a ledger history beyond the Accounts model's read and transfer.
const (
	// TypeEnqueue is a producer's Queue.Enqueue: key = transfer id, input = the
	// ledger.Transfer, output = {"seq": n} when acknowledged.
	TypeEnqueue = "enqueue"
)

// DuplicateAnswer is the error a transfer op records when the store answered Duplicate: a
// definite answer that this attempt moved nothing (the id was decided by an earlier one).
const DuplicateAnswer = "duplicate: the transfer id was already decided; this attempt moved nothing"

// Recorder records ledger operations into a history: each call is one op, stamped before the
// request leaves and after the answer is in, definite or ambiguous according to
// ledger.Definite. Retries are new ops.
type Recorder struct {
	*history.Recorder
	mu   sync.Mutex
	errs []error
}

// NewRecorder returns a recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{Recorder: history.NewRecorder(time.Time{})} }

// Err returns the recording errors (recorder bugs, never the service's): a history with any
// is too weak to judge.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

func (r *Recorder) keep(err error) {
	if err != nil {
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
	}
}

// finish records the outcome of op id: output on success, a definite failure, or ambiguous.
func (r *Recorder) finish(id int64, output any, err error) {
	switch {
	case err == nil:
		r.keep(r.Complete(id, output, nil))
	case ledger.Definite(err):
		r.keep(r.Complete(id, nil, err))
	default:
		r.keep(r.Ambiguous(id, err))
	}
}

// Transfer records one Store.Transfer of t by process.
func (r *Recorder) Transfer(process string, t ledger.Transfer, do func() (ledger.Outcome, error)) (ledger.Outcome, error) {
	id, err := r.Invoke(process, history.TypeTransfer, "", t)
	r.keep(err)
	o, err := do()
	switch {
	case err != nil:
		r.finish(id, nil, err)
	case o == ledger.Duplicate:
		r.keep(r.Complete(id, nil, errors.New(DuplicateAnswer)))
	case o == ledger.Applied:
		r.keep(r.Complete(id, history.OutcomeOK, nil))
	default:
		r.keep(r.Complete(id, history.OutcomeRejected, nil))
	}
	return o, err
}

// Read records one Store.Balance of account by process.
func (r *Recorder) Read(process, account string, do func() (int64, error)) (int64, error) {
	id, err := r.Invoke(process, history.TypeRead, account, nil)
	r.keep(err)
	b, err := do()
	r.finish(id, b, err)
	return b, err
}

// Enqueued is the output of an acknowledged enqueue.
type Enqueued struct {
	Seq int64 `json:"seq"`
}

// Enqueue records one Queue.Enqueue of t by process.
func (r *Recorder) Enqueue(process string, t ledger.Transfer, do func() (int64, error)) (int64, error) {
	id, err := r.Invoke(process, TypeEnqueue, t.ID, t)
	r.keep(err)
	seq, err := do()
	var out any
	if err == nil {
		out = Enqueued{Seq: seq}
	}
	r.finish(id, out, err)
	return seq, err
}
