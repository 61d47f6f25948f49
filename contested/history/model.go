package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// A Model is a sequential specification that Check holds a history against. This package
// provides the models the package doc lists, each made by its New function; a new one, in
// this package or in yours, needs only these three methods.
type Model interface {
	// Name names the model in results and visualization files.
	Name() string
	// Translate turns one recorded op into the porcupine input and output the model steps
	// on. It sees every op, including failed and timed-out ones (see Op.Failed and
	// Op.Ambiguous), and every op it translates is checked: none is left out, so that a
	// check's count always equals the history's. An op that observed nothing (a read that
	// failed or timed out) translates to one the model accepts in every state. An op the
	// model cannot understand is an error wrapping ErrInvalidHistory.
	Translate(op Op) (Translated, error)
	// Porcupine returns the porcupine model. Its Partition function, if any, must put every
	// op in exactly one partition (Check verifies the count) and must only split the history
	// where the parts are truly independent.
	Porcupine() porcupine.Model
}

// Translated is one op as a model sees it.
type Translated struct {
	Input, Output any // the op's input and output as the model's Step reads them
}

// Outcome words recorded in an op's output.
const (
	OutcomeOK       = "ok"        // the op took effect
	OutcomeRejected = "rejected"  // transfer: refused for insufficient funds; nothing moved
	OutcomeFenced   = "fenced"    // renew, release, reclaim: the epoch or holder no longer matched
	OutcomeNoneFree = "none-free" // acquire: every port was held
)

// Op types more than one model understands. Each model's doc lists the ops it takes, with
// their keys, inputs and outputs; a model's own op types are in its file.
const (
	TypeRead     = "read"     // Accounts, Bank, KV
	TypeWrite    = "write"    // Accounts, Bank, KV
	TypeDeposit  = "deposit"  // Accounts, Bank
	TypeTransfer = "transfer" // Accounts, Bank: input = Transfer, output = ok | rejected
	TypeBalances = "balances" // Accounts, Bank: output = balances of several accounts at once
	TypeAcquire  = "acquire"  // Lease, Lock
	TypeRenew    = "renew"    // Lease, Lock
	TypeRelease  = "release"  // Lease, Lock
	TypeReclaim  = "reclaim"  // Lease
)

// result is how a model sees an op's outcome.
type result uint8

const (
	resOK       result = iota + 1 // took effect; for reads, returned a value
	resRejected                   // definite business refusal (insufficient funds)
	resFenced                     // definite: the fence did not match
	resNoneFree                   // definite: no port was free
	resFailed                     // definite failure with no effect, no business outcome
	resUnknown                    // ambiguous: may or may not have taken effect
	resBusy                       // definite: the lock was held by another
	resMismatch                   // definite: a compare-and-set found another value
	resConflict                   // definite: a replay carried another payload than the first
)

func (r result) String() string {
	switch r {
	case resOK:
		return OutcomeOK
	case resRejected:
		return OutcomeRejected
	case resFenced:
		return OutcomeFenced
	case resNoneFree:
		return OutcomeNoneFree
	case resFailed:
		return "failed"
	case resUnknown:
		return "unknown"
	case resBusy:
		return OutcomeBusy
	case resMismatch:
		return OutcomeMismatch
	case resConflict:
		return OutcomeConflict
	}
	return "?"
}

// outcomeWord reads an output that is one of the Outcome words, or empty (nil/null).
func outcomeWord(raw json.RawMessage) (string, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return "", true
	}
	var s string
	if err := json.Unmarshal(t, &s); err != nil {
		return "", false
	}
	return s, true
}

// decodeInput decodes an op's input into v, naming the op on failure.
func decodeInput(op Op, v any) error {
	if len(op.Input) == 0 {
		return fmt.Errorf("%w: op %d (%s) has no input", ErrInvalidHistory, op.ID, op.Type)
	}
	if err := json.Unmarshal(op.Input, v); err != nil {
		return fmt.Errorf("%w: op %d (%s) input %s: %v", ErrInvalidHistory, op.ID, op.Type, op.Input, err)
	}
	return nil
}

// okOr reads the outcome of an op whose answer is "ok" or the refusal word (with res its
// result): a timeout is unknown, an error with no output a definite failure.
func okOr(op Op, word string, res result) (result, error) {
	w, isWord := outcomeWord(op.Output)
	switch {
	case op.Timeout:
		return resUnknown, nil
	case isWord && w == OutcomeOK && op.Error == "":
		return resOK, nil
	case isWord && w == word:
		return res, nil
	case isWord && w == "" && op.Error != "":
		return resFailed, nil
	}
	return 0, badOutput(op, fmt.Sprintf(`"ok" or %q`, word))
}

func badOutput(op Op, want string) error {
	return fmt.Errorf("%w: op %d (%s) output %s: want %s", ErrInvalidHistory, op.ID, op.Type, orNull(op.Output), want)
}

// mix64 is the splitmix64 finalizer: a cheap, well-spread 64-bit mix.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// Possible states.
//
// An op with an unknown outcome may or may not have taken effect. Porcupine lets it take
// effect anywhere after its invoke (its Return is math.MaxInt64), but a model that makes the
// choice "it happened here" commits porcupine to a search that must backtrack over that choice
// whenever later ops contradict it. As in etcd's robustness model, the models here instead
// fork: the state is the set of states the service may be in, an ambiguous op maps each member
// to "applied" and "not applied", and definite ops filter the set. The search then rarely
// backtracks over an ambiguous op, and a history with many of them stays cheap to check.

// family describes the concrete states of a model.
type family[S comparable] struct {
	hash  func(S) uint64
	equal func(a, b S) bool
	// step calls emit for every state s can move to on (input, output); none means the op is
	// illegal in s. Emitting s itself means "unchanged".
	step     func(ctx context.Context, s S, input, output any, emit func(S))
	describe func(S) string
}

// stateSet is an immutable set of possible states. sum is the sum of the members' hashes, so
// equal sets have equal sums whatever the order.
type stateSet[S comparable] struct {
	members []S
	hashes  []uint64
	sum     uint64
	index   map[uint64][]int // built once the set is large
}

const indexFrom = 32

func (f *family[S]) singleton(s S) *stateSet[S] {
	h := f.hash(s)
	return &stateSet[S]{members: []S{s}, hashes: []uint64{h}, sum: h}
}

func (f *family[S]) contains(set *stateSet[S], h uint64, s S) bool {
	if set.index != nil {
		for _, i := range set.index[h] {
			if f.equal(set.members[i], s) {
				return true
			}
		}
		return false
	}
	for i, mh := range set.hashes {
		if mh == h && f.equal(set.members[i], s) {
			return true
		}
	}
	return false
}

func (f *family[S]) add(set *stateSet[S], s S) {
	h := f.hash(s)
	if f.contains(set, h, s) {
		return
	}
	set.members = append(set.members, s)
	set.hashes = append(set.hashes, h)
	set.sum += h
	switch n := len(set.members); {
	case n == indexFrom:
		set.index = make(map[uint64][]int, 2*n)
		for i, mh := range set.hashes {
			set.index[mh] = append(set.index[mh], i)
		}
	case n > indexFrom:
		set.index[h] = append(set.index[h], n-1)
	}
}

// porcupine builds the porcupine model over sets of S, starting from {init}.
func (f *family[S]) porcupine(init S) porcupine.Model {
	start := f.singleton(init)
	return porcupine.Model{
		Init: func() any { return start },
		StepContext: func(ctx context.Context, state, input, output any) (bool, any) {
			set := state.(*stateSet[S])
			next := &stateSet[S]{}
			same := true // every member moved to itself: reuse the set
			for i, s := range set.members {
				if i%64 == 63 && ctx.Err() != nil {
					return false, set
				}
				emitted := 0
				f.step(ctx, s, input, output, func(n S) {
					emitted++
					if n != s || emitted > 1 {
						same = false
					}
					f.add(next, n)
				})
				if emitted != 1 {
					same = false
				}
			}
			if len(next.members) == 0 {
				return false, set
			}
			if same && len(next.members) == len(set.members) {
				return true, set
			}
			return true, next
		},
		Equal: func(x, y any) bool {
			a, b := x.(*stateSet[S]), y.(*stateSet[S])
			if a == b {
				return true
			}
			if a.sum != b.sum || len(a.members) != len(b.members) {
				return false
			}
			for i, s := range a.members {
				if !f.contains(b, a.hashes[i], s) {
					return false
				}
			}
			return true
		},
		Hash: func(x any) uint64 { return x.(*stateSet[S]).sum },
		DescribeState: func(x any) string {
			set := x.(*stateSet[S])
			if len(set.members) == 1 {
				return f.describe(set.members[0])
			}
			var b strings.Builder
			fmt.Fprintf(&b, "one of %d possible states: ", len(set.members))
			for i, s := range set.members {
				if i == 4 {
					fmt.Fprintf(&b, " | … %d more", len(set.members)-i)
					break
				}
				if i > 0 {
					b.WriteString(" | ")
				}
				b.WriteString(f.describe(s))
			}
			return b.String()
		},
	}
}
