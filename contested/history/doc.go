// Package history records what clients did to a service while faults were armed and checks
// that record against the model of what the service promises.
//
// It gives:
//   - [Op], the history record oracles consume, with [WriteJSONL] and [ReadJSONL];
//   - [Recorder], which stamps operations and fault windows from one monotonic clock;
//   - models a team picks for its component: [NewLock] (a lock or lease, with or without
//     fencing tokens), [NewQueue] (a queue or job store, at-least-once or exactly-once, in
//     order or not), [NewKV] (a linearizable register per key, with compare-and-set),
//     [NewBank] (a bank: conservation, no negative balance) and [NewIdempotent] (a request
//     under an idempotency key: applied once, replays answered alike); and the two this
//     repository's own services use, [Accounts] and [Lease];
//   - [Check], the one way to judge a history: it holds it against a model and says [Ok],
//     [Illegal] or [Unknown], names every broken promise as an [Anomaly] in plain words with
//     the ops involved, and saves porcupine's visualization (with the fault windows and the
//     anomalies drawn on it) when it is not Ok.
//
// # What a check checks
//
// A model is a sequential specification porcupine searches a legal order against
// (linearizability), and, when it is an [Auditor], a set of promises checked by scanning the
// ops' real-time order: those that are about time (a lease's time to live, an abandoned lock
// acquirable again within a bound) or about the whole history (every acknowledged enqueue
// delivered, a key applied at most once) rather than about a legal order. [Result.Properties]
// lists every promise a check covered, how (KindSearch or KindRealTime), its own verdict and
// how many ops it examined; a promise the history cannot decide (a queue never seen drained,
// an idempotency key whose count was never read) is Unknown, which is never green. An audit's
// anomaly is a proof, ambiguous outcomes included, so it makes the verdict Illegal even when
// the search ran out of time. When only the search finds a history illegal, the anomaly names
// the longest legal order it found, the state it reached and the op it could not place.
//
// The Queue model has no search (delivery is not a question of order): porcupine only draws
// its history. Every model's doc lists its ops: their types, keys, inputs and outputs.
//
// # The history record
//
// One operation is one JSON object on one line. Every field is written; a field with no value
// is written as null, never left out (a missing field and an unused one must not look alike).
//
//	op_id        integer, unique within the history. A retry is a new op with a new id.
//	process      the client, session or stream that issued the op. A process is sequential:
//	             it invokes its next op only after the previous one completed.
//	invoke       when the op was sent: nanoseconds since the recorder's base time, from a
//	             monotonic clock shared by every process of the history.
//	complete     when the response (or an ambiguous error) arrived, same clock; null when no
//	             response ever came.
//	type         what the op is: read, write, deposit, transfer, acquire, renew, release,
//	             reclaim (the model decides which it understands).
//	key          the object addressed (an account, a port), or null.
//	input        the op's arguments as JSON, or null.
//	output       the response as JSON; null for an op with no response or a timeout.
//	error        the error the client saw, or null. With timeout false it is a definite
//	             failure (the op did not take effect); with timeout true it is kept only for
//	             diagnosis.
//	timeout      true when the outcome is unknown: no response, or an error that cannot tell
//	             "not done" from "done, answer lost" (a reset during commit, a deadline).
//	fault_epoch  the id of the fault window that was open when the op was invoked (the most
//	             recently opened one if several overlap), or null.
//
// Invariants [Validate] checks: op ids are unique; complete is not before invoke; an op
// without complete has timeout true; a timed-out op has no output (a [Recorder] keeps these
// by construction); a process's ops do not overlap (the caller keeps that one: give
// concurrent streams their own process ids). The same op id recorded twice with different outcomes is a
// recorder bug and is refused with [ErrConflictingOutcome]: it is never resolved by picking one.
//
// Intervals may be wider than the truth but never narrower: the recorder stamps invoke
// before the request leaves and complete after the response is in. A wider interval only
// lets the checker accept more orders; a narrower one could make a correct service look
// illegal.
//
// # Ambiguous outcomes
//
// An op with timeout true may have taken effect at any moment after it was invoked, or never.
// The checker gives it a return time of math.MaxInt64, so porcupine may place it anywhere
// after its invoke, including after every other op (which is the same as "it never
// happened"). Treating it as failed would hide lost writes that did land; treating it as
// succeeded would invent effects. Failed and timed-out reads carry no information: they are
// checked all the same, as reads the model accepts in every state, so that every op of the
// history is in the check and in its count. Failed writes constrain the check, because "it
// did not happen" is a claim the model can refute.
//
// The real-time audits follow the same rule: an op whose answer was lost proves nothing it
// may not have done (it is never counted as done, nor as not done), and, unless a model's spec
// bounds when such an op can still land (LockSpec.EffectWithin, a statement timeout), it may
// land at any time after its invoke.
//
// The models also fork on an ambiguous op: their state is the set of states the service may
// be in, and the op maps each to "applied" and "not applied" (as etcd's robustness model
// does). Porcupine then seldom has to backtrack over where it placed an ambiguous op, so
// legal histories with faults check about as fast as those without. Proving a history
// illegal is another matter: every order must be ruled out, including every place each
// ambiguous op could have landed, so that cost grows steeply with the number of ambiguous ops
// in one partition (see the package tests for figures). A check that runs out of time says
// Unknown, which is not green, so the cost can delay a red verdict but never fake a green one.
//
// # Verdicts
//
// [Ok] means porcupine found a linearization of every op it was given and every audited
// promise held, and [Result] reports how many ops that was next to how many the history
// holds, so a truncated history cannot pass unnoticed. [Illegal] means no linearization
// exists or an audit found a broken promise; [Result.Anomalies] say which. [Unknown] means
// the check ran out of time (or was cancelled) before deciding, or a promise could not be
// decided from the history: it is never green, because an undecided check proves nothing
// about the service.
//
// The models' real-time promises read time on the recorder's clock and compare it with the
// service's (a lease's expiry is the service's now() plus its TTL): both must run at the same
// rate, as a host's clocks do; each such model takes a Slack for the difference.
package history
