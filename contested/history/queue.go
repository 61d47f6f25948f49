package history

import (
	"encoding/json"
	"fmt"
	"html"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Delivered is the output of a dequeue that got a job.
type Delivered struct {
	Job string `json:"job"` // the id of the job delivered
}

// Op types and outcomes of the queue model.
const (
	// TypeEnqueue: key = the job's id; input: its payload (or null); output: null or "ok".
	TypeEnqueue = "enqueue"
	// TypeDequeue: a worker asks for a job; output: Delivered, or "empty".
	TypeDequeue = "dequeue"
	// TypeAck: key = the job; the worker finished it; output: "ok", or "fenced" (the job was
	// no longer its own: its visibility ran out and it went to another worker).
	TypeAck = "ack"
	// TypeNack: key = the job; the worker gives it back for another delivery; output "ok".
	TypeNack = "nack"
	// OutcomeEmpty: a dequeue found no job.
	OutcomeEmpty = "empty"
)

// Delivery is what a queue promises about how often a job is delivered.
type Delivery int

const (
	// AtLeastOnce: every acknowledged enqueue is delivered, maybe more than once.
	AtLeastOnce Delivery = iota
	// ExactlyOnce: every acknowledged enqueue is delivered, and no job is delivered again
	// unless a worker gave it back (nack).
	ExactlyOnce
)

// String is the guarantee's name: "at-least-once" or "exactly-once".
func (d Delivery) String() string {
	if d == ExactlyOnce {
		return "exactly-once"
	}
	return "at-least-once"
}

// QueueSpec declares what a queue or job store promises.
type QueueSpec struct {
	// Delivery is the guarantee: AtLeastOnce, or ExactlyOnce (no job
	// delivered twice unless given back).
	Delivery Delivery
	// FIFO: jobs are delivered in the order they were enqueued: a job whose enqueue began
	// after another's was answered is never first delivered before it.
	FIFO bool
	// Visibility is how long a delivered job stays invisible to other workers before the
	// store may deliver it again (a visibility timeout, a claim's lease); 0 means a job is
	// never delivered again while its worker runs it.
	Visibility time.Duration
	// Slack absorbs the difference between the clients' clock and the store's over one
	// visibility timeout; 0 means 1 ms plus 1% of Visibility.
	Slack time.Duration
}

// Queue is the model of a queue or job store, checked by real-time scans only (delivery is
// not a question of a legal sequential order): porcupine draws its history, and the audit
// checks, over every op's real-time order:
//
//   - every acknowledged enqueue is delivered: a job whose enqueue was answered ok before the
//     last dequeue answered "empty" began was delivered (and, when the history records acks
//     and the store has a visibility timeout, acknowledged, or delivered again after its
//     timeout ran out); a job given back (nack) was delivered again;
//   - nothing is delivered that was not enqueued (or before its enqueue began);
//   - delivered once (ExactlyOnce): no job delivered twice unless given back in between, no
//     job acknowledged twice;
//   - no job runs twice at once: a job is not delivered to a worker while another worker
//     certainly still runs it (from its delivery's answer until that worker acknowledged or
//     gave back the job or asked for its next one, within the visibility timeout); a worker
//     that did neither after a delivery (it crashed) is not counted as still running it;
//   - in order (FIFO): a job enqueued after another was answered is not first delivered
//     before it (unless a dequeue whose answer was lost may have delivered the other first).
//
// Its ops (the process is the worker or producer):
//
//	enqueue  key: the job; input: its payload; output: null or "ok"
//	dequeue  output: Delivered{Job}, or "empty"
//	ack      key: the job; output: "ok" or "fenced"
//	nack     key: the job; output: "ok"
//
// Completeness needs the history to end with the queue drained: a dequeue answered "empty"
// after the last enqueue was answered. Without one, that property is Unknown (never green):
// let the workload's consumers run until the queue answers empty. A push-based consumer (a
// framework that calls a handler per job) records that dequeue itself, as a process of its
// own, once the framework says no job is left.
//
// Repeated enqueues of one key are one job: every enqueue of a key enqueues the same job (an
// idempotent enqueue, an upsert by key). It is delivered once under ExactlyOnce however often
// it was enqueued, and a second delivery is a duplicate. A store that makes each enqueue a
// job of its own needs a key per enqueue.
type Queue struct {
	spec QueueSpec
}

var _ Auditor = (*Queue)(nil)

// NewQueue returns the queue model for spec.
func NewQueue(spec QueueSpec) *Queue {
	if spec.Slack == 0 {
		spec.Slack = time.Millisecond + spec.Visibility/100
	}
	return &Queue{spec: spec}
}

// Name implements Model.
func (q *Queue) Name() string { return "queue" }

type queueIn struct {
	typ string
	job string // enqueue, ack, nack: the key; dequeue: "" (the job is in the output)
}

type queueOut struct {
	res result
	job string // dequeue ok: the job delivered
}

// Translate implements Model.
func (q *Queue) Translate(op Op) (Translated, error) {
	in := queueIn{typ: op.Type, job: op.Key}
	w, isWord := outcomeWord(op.Output)
	var out queueOut
	switch {
	case op.Timeout:
		out.res = resUnknown
	case isWord && w == "" && op.Error != "":
		out.res = resFailed
	}
	switch op.Type {
	case TypeEnqueue, TypeNack:
		if op.Key == "" {
			return Translated{}, fmt.Errorf("%w: op %d (%s) has no key: name the job", ErrInvalidHistory, op.ID, op.Type)
		}
		if out.res == 0 {
			if !isWord || (w != "" && w != OutcomeOK) || op.Error != "" {
				return Translated{}, badOutput(op, `null or "ok"`)
			}
			out.res = resOK
		}
	case TypeAck:
		if op.Key == "" {
			return Translated{}, fmt.Errorf("%w: op %d (ack) has no key: name the job", ErrInvalidHistory, op.ID)
		}
		var err error
		if out.res, err = okOr(op, OutcomeFenced, resFenced); err != nil {
			return Translated{}, err
		}
	case TypeDequeue:
		if out.res == 0 {
			switch {
			case isWord && w == OutcomeEmpty:
				out.res = resNoneFree
			case !isWord:
				var d Delivered
				if err := json.Unmarshal(op.Output, &d); err != nil || d.Job == "" {
					return Translated{}, badOutput(op, `{"job":…} or "empty"`)
				}
				out.res, out.job = resOK, d.Job
			default:
				return Translated{}, badOutput(op, `{"job":…} or "empty"`)
			}
		}
	default:
		return Translated{}, fmt.Errorf("%w: op %d: the queue model has no op type %q", ErrInvalidHistory, op.ID, op.Type)
	}
	return Translated{Input: in, Output: out}, nil
}

// Porcupine implements Model: the queue has no search (its promises are real-time); the model
// only describes its ops, for the visualization.
func (q *Queue) Porcupine() porcupine.Model {
	return porcupine.Model{DescribeOperation: describeQueueOp}
}

func describeQueueOp(input, output any) string {
	in, out := input.(queueIn), output.(queueOut)
	res := out.res.String()
	switch {
	case in.typ == TypeDequeue && out.res == resOK:
		return html.EscapeString("dequeue → " + out.job)
	case in.typ == TypeDequeue && out.res == resNoneFree:
		res = OutcomeEmpty
	}
	if in.job != "" {
		return html.EscapeString(fmt.Sprintf("%s(%s) → %s", in.typ, in.job, res))
	}
	return html.EscapeString(fmt.Sprintf("%s → %s", in.typ, res))
}

// queueEv is one op as the audit reads it.
type queueEv struct {
	op   Op
	in   queueIn
	out  queueOut
	next int64 // a delivery: when its worker ended the run (never when it did not)
}

func (e *queueEv) job() string {
	if e.in.typ == TypeDequeue {
		return e.out.job
	}
	return e.in.job
}

// Audit implements Auditor.
func (q *Queue) Audit(ops []Op) Audit {
	var evs []*queueEv
	running := map[string]*queueEv{} // worker → the delivery it runs
	for _, i := range sortedByInvoke(ops) {
		t, err := q.Translate(ops[i])
		if err != nil {
			continue
		}
		e := &queueEv{op: ops[i], in: t.Input.(queueIn), out: t.Output.(queueOut), next: never}
		// A run ends when its worker acknowledges or gives back the job, or asks for its
		// next job; enqueues it makes meanwhile (follow-up jobs) do not end it.
		if d := running[e.op.Process]; d != nil && (e.in.typ == TypeDequeue || e.in.job == d.out.job) && e.in.typ != TypeEnqueue {
			d.next = e.op.Invoke
			delete(running, e.op.Process)
		}
		if e.in.typ == TypeDequeue && e.out.res == resOK {
			running[e.op.Process] = e
		}
		evs = append(evs, e)
	}
	byJob := map[string][]*queueEv{}
	var lastEmpty *queueEv
	for _, e := range evs {
		if e.in.typ == TypeDequeue && e.out.res == resNoneFree {
			if lastEmpty == nil || e.op.Invoke > lastEmpty.op.Invoke {
				lastEmpty = e
			}
			continue
		}
		if j := e.job(); j != "" {
			byJob[j] = append(byJob[j], e)
		}
	}
	jobs := make([]string, 0, len(byJob))
	for j := range byJob {
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b string) int { return cmpInt(byJob[a][0].op.Invoke, byJob[b][0].op.Invoke) })

	n := len(ops)
	complete := newAudit("every acknowledged enqueue is delivered", n)
	invented := newAudit("nothing is delivered that was not enqueued", n)
	once := newAudit("delivered once", n)
	alone := newAudit("no job runs twice at once", n)
	order := newAudit("delivered in order", n)
	acks := slices.ContainsFunc(evs, func(e *queueEv) bool { return e.in.typ == TypeAck })
	undecided := 0
	var missing []lostJob
	for _, j := range jobs {
		u, lost := q.auditJob(j, byJob[j], lastEmpty, acks, invented, once, alone)
		undecided += u
		if lost != nil {
			missing = append(missing, *lost)
		}
	}
	// A dequeue whose answer was lost may have delivered any one job: as many missing jobs
	// as there are such dequeues are not proven lost.
	blind := 0
	for _, e := range evs {
		if e.in.typ == TypeDequeue && e.out.res == resUnknown {
			blind++
		}
	}
	if len(missing) > blind {
		note := ""
		if blind > 0 {
			note = fmt.Sprintf(" (%d of the %d jobs listed may have gone to the %d dequeues whose answers were lost; the others cannot have)", blind, len(missing), blind)
		}
		for _, m := range missing {
			complete.found(m.text+note, m.ops...)
		}
	}
	if undecided > 0 {
		what := "no dequeue answered empty"
		if lastEmpty != nil {
			what = "the last dequeue answered empty at " + at(lastEmpty.op.Invoke)
		}
		complete.unknown(fmt.Sprintf("%d acknowledged enqueues were answered after %s: let the consumers run until the queue answers empty after the last enqueue", undecided, what))
	}
	if q.spec.FIFO {
		var blindAt []int64 // when the dequeues whose answers were lost began
		for _, e := range evs {
			if e.in.typ == TypeDequeue && e.out.res == resUnknown {
				blindAt = append(blindAt, e.op.Invoke)
			}
		}
		q.auditOrder(order, jobs, byJob, blindAt)
	}
	var a Audit
	a.add(complete)
	a.add(invented)
	if q.spec.Delivery == ExactlyOnce {
		a.add(once)
	}
	a.add(alone)
	if q.spec.FIFO {
		a.add(order)
	}
	return a
}

// lostJob is a job the queue did not deliver as it promised: the anomaly's text and ops.
type lostJob struct {
	text string
	ops  []int64
}

// auditJob checks one job's promises. It returns 1 when the job's delivery cannot be judged
// (it was acknowledged after the queue last answered empty), and the job when it was not
// delivered as promised before the queue answered empty.
func (q *Queue) auditJob(job string, evs []*queueEv, lastEmpty *queueEv, acks bool, invented, once, alone *audit) (int, *lostJob) {
	var enq, deliveries, acked []*queueEv
	var nacks []*queueEv
	mayAck := false // acknowledged, or an ack whose answer was lost
	for _, e := range evs {
		switch {
		case e.in.typ == TypeEnqueue && e.out.res != resFailed:
			enq = append(enq, e)
		case e.in.typ == TypeDequeue:
			deliveries = append(deliveries, e)
		case e.in.typ == TypeAck && e.out.res == resOK:
			acked = append(acked, e)
			mayAck = true
		case e.in.typ == TypeAck && e.out.res == resUnknown:
			mayAck = true
		case e.in.typ == TypeNack && e.out.res != resFailed:
			nacks = append(nacks, e)
		}
	}
	// Nothing delivered that was not enqueued.
	for _, d := range deliveries {
		if !slices.ContainsFunc(enq, func(e *queueEv) bool { return e.op.Invoke < gaveUp(d.op) }) {
			why := "which was never enqueued"
			if len(enq) > 0 {
				why = "before its enqueue began at " + at(enq[0].op.Invoke)
			}
			invented.found(fmt.Sprintf("invented delivery: %s got job %s at %s, %s", d.op.Process, job, opSpan(d.op), why), d.op.ID)
		}
	}
	// Delivered once.
	for i, d := range deliveries {
		if i == 0 {
			continue
		}
		prev := deliveries[i-1]
		if !slices.ContainsFunc(nacks, func(n *queueEv) bool { return n.op.Invoke > prev.op.Invoke && n.op.Invoke < gaveUp(d.op) }) {
			once.found(fmt.Sprintf("duplicate delivery: job %s was delivered to %s at %s and again to %s at %s",
				job, prev.op.Process, at(gaveUp(prev.op)), d.op.Process, at(gaveUp(d.op))), prev.op.ID, d.op.ID)
		}
	}
	if len(acked) > 1 {
		once.found(fmt.Sprintf("acknowledged twice: job %s was acknowledged by %s at %s and by %s at %s",
			job, acked[0].op.Process, at(gaveUp(acked[0].op)), acked[1].op.Process, at(gaveUp(acked[1].op))), acked[0].op.ID, acked[1].op.ID)
	}
	// No job runs twice at once.
	for i, d1 := range deliveries {
		if done(d1.op) == never {
			continue
		}
		end := d1.next
		if q.spec.Visibility > 0 {
			end = min(end, d1.op.Invoke+int64(q.spec.Visibility)-int64(q.spec.Slack))
		}
		if end == never {
			continue // its worker never did anything else: it may have crashed
		}
		for _, d2 := range deliveries[i+1:] {
			if d2.op.Process != d1.op.Process && d2.op.Invoke > done(d1.op) && done(d2.op) < end {
				a := fmt.Sprintf("run twice at once: job %s was delivered to %s at %s while %s was still running it (delivered at %s, running until at least %s)",
					job, d2.op.Process, at(done(d2.op)), d1.op.Process, at(done(d1.op)), at(end))
				alone.found(a, d2.op.ID, d1.op.ID)
			}
		}
	}
	// Every acknowledged enqueue is delivered.
	var ok *queueEv
	for _, e := range enq {
		if e.out.res == resOK && (ok == nil || done(e.op) < done(ok.op)) {
			ok = e
		}
	}
	if ok == nil {
		return 0, nil
	}
	if lastEmpty == nil || done(ok.op) >= lastEmpty.op.Invoke {
		return 1, nil
	}
	drained := fmt.Sprintf("the queue answered empty to %s at %s", lastEmpty.op.Process, at(lastEmpty.op.Invoke))
	if len(deliveries) == 0 {
		return 0, &lostJob{fmt.Sprintf("lost job: job %s, enqueued by %s (answered ok at %s), was never delivered, though %s",
			job, ok.op.Process, at(done(ok.op)), drained), []int64{ok.op.ID, lastEmpty.op.ID}}
	}
	lastD := deliveries[len(deliveries)-1]
	for _, n := range nacks {
		if n.op.Invoke > lastD.op.Invoke && done(n.op) < lastEmpty.op.Invoke {
			return 0, &lostJob{fmt.Sprintf("lost job: job %s was given back by %s at %s and never delivered again, though %s",
				job, n.op.Process, at(done(n.op)), drained), []int64{n.op.ID, lastEmpty.op.ID}}
		}
	}
	if acks && q.spec.Visibility > 0 && !mayAck {
		expired := gaveUp(lastD.op) + int64(q.spec.Visibility) + int64(q.spec.Slack)
		if expired < lastEmpty.op.Invoke {
			return 0, &lostJob{fmt.Sprintf("lost job: job %s was delivered to %s at %s and never acknowledged, and not delivered again, though its visibility timeout (%s) ran out by %s and %s",
				job, lastD.op.Process, at(gaveUp(lastD.op)), q.spec.Visibility, at(expired), drained), []int64{lastD.op.ID, lastEmpty.op.ID}}
		}
	}
	return 0, nil
}

// auditOrder: a job whose enqueue began after another's was answered ok is not first delivered
// before that other job's first delivery began. A dequeue whose answer was lost may have
// delivered the other job first: one that began before the later job's delivery was answered
// excuses it.
func (q *Queue) auditOrder(a *audit, jobs []string, byJob map[string][]*queueEv, blindAt []int64) {
	type entry struct {
		job      string
		enq, dlv *queueEv // the enqueue answered ok and the first delivery
	}
	var es []entry
	for _, j := range jobs {
		var e entry
		e.job = j
		for _, x := range byJob[j] {
			switch {
			case x.in.typ == TypeEnqueue && x.out.res == resOK && e.enq == nil:
				e.enq = x
			case x.in.typ == TypeDequeue && e.dlv == nil:
				e.dlv = x
			}
		}
		if e.enq != nil && e.dlv != nil {
			es = append(es, e)
		}
	}
	// For each b, the earlier-enqueued a whose first delivery began last: if it began after
	// b's first delivery was answered, b jumped the queue.
	slices.SortFunc(es, func(x, y entry) int { return cmpInt(done(x.enq.op), done(y.enq.op)) })
	for _, b := range es {
		var worst *entry
		for i := range es {
			x := &es[i]
			if done(x.enq.op) >= b.enq.op.Invoke {
				break
			}
			if x.job != b.job && x.dlv.op.Invoke > done(b.dlv.op) && (worst == nil || x.dlv.op.Invoke > worst.dlv.op.Invoke) {
				worst = x
			}
		}
		if worst != nil && !slices.ContainsFunc(blindAt, func(t int64) bool { return t < done(b.dlv.op) }) {
			a.found(fmt.Sprintf("out of order: job %s was delivered to %s at %s before job %s (delivered at %s), although %s was enqueued first (answered at %s; %s was sent at %s)",
				b.job, b.dlv.op.Process, at(done(b.dlv.op)), worst.job, at(worst.dlv.op.Invoke), worst.job, at(done(worst.enq.op)), b.job, at(b.enq.op.Invoke)),
				b.dlv.op.ID, worst.dlv.op.ID)
		}
	}
}
